import { Hono } from "hono";
import type { Area } from "../http/area";
import type { AppEnv } from "../http/context";
import { accountPageRouter } from "./account-routes";
import { signinRouter } from "./routes";

/** The browser pages of a person: sign-in, sign-out and the signed-in account page (session cookie). */
export const signinArea: Area = {
  name: "signin",
  router: new Hono<AppEnv>().route("/", signinRouter).route("/", accountPageRouter),
};
