import type { Area } from "../http/area";
import { hourly } from "../http/registry";

/** Once an hour (at minute 30), forget redeemed install states that have expired anyway. */
const pruneSweep = hourly(30, async (env, at) => (await import("./service")).pruneStates(env, at));

/** The install belongs to the workspace, not to the admin who made it: no erase step. */
export const teamchatArea: Area = {
  name: "teamchat",
  routes: {
    paths: ["/v1/api/integrations/slack", "/v1/api/artifacts", "/v1/webhooks/slack", "/v1/integrations/slack"],
    load: async () => (await import("./routes")).teamchatRouter,
  },
  crons: [pruneSweep],
};
