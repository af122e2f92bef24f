import type { Area } from "../http/area";

/** Once an hour, forget redeemed install states that have expired anyway. */
async function pruneSweep(env: Env, controller: ScheduledController): Promise<void> {
  if (new Date(controller.scheduledTime).getUTCMinutes() !== 30) return;
  const { pruneStates } = await import("./service");
  await pruneStates(env, controller.scheduledTime);
}

/** The install belongs to the workspace, not to the admin who made it: no erase step. */
export const teamchatArea: Area = {
  name: "teamchat",
  routes: {
    paths: ["/v1/api/integrations/slack", "/v1/api/artifacts", "/v1/webhooks/slack", "/v1/integrations/slack"],
    load: async () => (await import("./routes")).teamchatRouter,
  },
  crons: [pruneSweep],
};
