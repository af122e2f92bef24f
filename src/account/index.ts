import type { Area } from "../http/area";

/** Sign-up, the caller's own account, and erasing it. */
export const accountArea: Area = {
  name: "account",
  routes: { paths: ["/v1/api/signup", "/v1/api/me"], load: async () => (await import("./routes")).accountRouter },
};
