import { Hono } from "hono";
import type { Area } from "../http/area";
import type { AppEnv } from "../http/context";

/** The browser pages of a person: sign-in, sign-out and the signed-in account page (session cookie). */
export const signinArea: Area = {
  name: "signin",
  routes: {
    paths: ["/v1/signin", "/v1/signout", "/v1/account"],
    load: async () => {
      const [{ signinRouter }, { accountPageRouter }] = await Promise.all([
        import("./routes"),
        import("./account-routes"),
      ]);
      return new Hono<AppEnv>().route("/", signinRouter).route("/", accountPageRouter);
    },
  },
};
