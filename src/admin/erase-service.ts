import { type AuditEventInput, auditInBatch } from "../audit/events";
import type { EraseStep, ErasureCounts } from "../http/registry";
import { anonymizeUser, liveUser, otherAdmins } from "../identity/users";
import { badRequest, notFound } from "../platform/problem";

type Steps = readonly { area: string; step: EraseStep }[];

/** Runs every area's step in the order of the area list and adds up their counters. */
export async function runEraseSteps(env: Env, steps: Steps, workspaceId: string, userId: string) {
  const counts: ErasureCounts = {};
  for (const { step } of steps) {
    for (const [k, v] of Object.entries(await step(env, workspaceId, userId))) counts[k] = (counts[k] ?? 0) + v;
  }
  return counts;
}

export type ErasureSummary = { user_id: string; erased: true; counts: ErasureCounts };

/**
 * Erases a user of the workspace: every area's step removes the user's credentials and data
 * (the audit area's, last, redacts the user's details; the chain still verifies), then the
 * user row is anonymized. Each step is idempotent and the row is anonymized last, so a
 * failure part-way can be retried to completion.
 */
export async function eraseUser(
  env: Env,
  steps: Steps,
  workspaceId: string,
  userId: string,
  opts: { self: boolean },
  eventOf: (result: ErasureSummary) => AuditEventInput,
): Promise<ErasureSummary> {
  const user = await liveUser(env, workspaceId, userId);
  if (!user) throw notFound("No such user in this workspace");
  if (opts.self && user.role === "admin") {
    if (!(await otherAdmins(env, workspaceId, userId)))
      throw badRequest(
        "last_admin",
        "The last admin of a workspace cannot erase themselves; make another user admin first",
      );
  }

  const counts = await runEraseSteps(env, steps, workspaceId, userId);
  const summary: ErasureSummary = { user_id: userId, erased: true, counts };
  await anonymizeUser(env, userId, auditInBatch(env, eventOf(summary)));
  return summary;
}

export function refuseSelfErase(callerId: string, subjectId: string): void {
  if (callerId === subjectId) throw badRequest("self_erase", "Use POST /v1/api/me/erase to erase your own account");
}
