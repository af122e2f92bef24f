import type { Area } from "../http/area";
import { teamchatRouter } from "./routes";
import { pruneStates } from "./service";

/** Once an hour, forget redeemed install states that have expired anyway. */
async function pruneSweep(env: Env, controller: ScheduledController): Promise<void> {
  if (new Date(controller.scheduledTime).getUTCMinutes() !== 30) return;
  await pruneStates(env, controller.scheduledTime);
}

/** The install belongs to the workspace, not to the admin who made it: no erase step. */
export const teamchatArea: Area = { name: "teamchat", router: teamchatRouter, crons: [pruneSweep] };
