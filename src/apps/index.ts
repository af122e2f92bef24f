import type { Area } from "../http/area";

/**
 * Every minute the scheduler calls the crons; the sweep for idle apps runs once an hour
 * (at minute 0 of the controller's scheduled time) and returns at once otherwise.
 */
async function sleepSweep(env: Env, controller: ScheduledController): Promise<void> {
  if (new Date(controller.scheduledTime).getUTCMinutes() !== 0) return;
  const { sleepIdleApps } = await import("./service");
  await sleepIdleApps(env, controller.scheduledTime);
}

/** Apps are workspace data: erasing their creator keeps them (no erase step). */
export const appsArea: Area = {
  name: "apps",
  routes: { paths: ["/v1/api/apps", "/v1/apps"], load: async () => (await import("./routes")).appsRouter },
  tools: async (scope) => (await import("./tools")).appTools(scope),
  crons: [sleepSweep],
};
