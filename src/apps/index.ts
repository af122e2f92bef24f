import type { Area } from "../http/area";
import { hourly } from "../http/registry";

/** The sweep for idle apps, at minute 0 of every hour. */
const sleepSweep = hourly(0, async (env, at) => (await import("./service")).sleepIdleApps(env, at));

/** Apps are workspace data: erasing their creator keeps them (no erase step). */
export const appsArea: Area = {
  name: "apps",
  routes: { paths: ["/v1/api/apps", "/v1/apps"], load: async () => (await import("./routes")).appsRouter },
  tools: async (scope) => (await import("./tools")).appTools(scope),
  crons: [sleepSweep],
};
