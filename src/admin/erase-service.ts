import { and, eq, isNull, ne, sql } from "drizzle-orm";
import { apiTokens, sessions, users } from "../db/schema";
import type { EraseStep, ErasureCounts } from "../http/registry";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { badRequest, notFound } from "../platform/problem";

/** The admin area's own step: the user's personal access tokens and sign-in sessions. */
export const eraseCredentials: EraseStep = async (env, workspaceId, userId) => {
  const now = nowIso();
  const [tokens, signins] = await db(env).batch([
    db(env)
      .update(apiTokens)
      .set({ revokedAt: now })
      .where(and(eq(apiTokens.workspaceId, workspaceId), eq(apiTokens.userId, userId), isNull(apiTokens.revokedAt))),
    db(env)
      .update(sessions)
      .set({ revokedAt: now })
      .where(and(eq(sessions.workspaceId, workspaceId), eq(sessions.userId, userId), isNull(sessions.revokedAt))),
  ]);
  return { tokens: tokens.meta.changes, sessions: signins.meta.changes };
};

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
): Promise<ErasureSummary> {
  const d = db(env);
  const user = await d
    .select({ id: users.id, role: users.role })
    .from(users)
    .where(and(eq(users.id, userId), eq(users.workspaceId, workspaceId), isNull(users.erasedAt)))
    .get();
  if (!user) throw notFound("No such user in this workspace");
  if (opts.self && user.role === "admin") {
    const others = await d
      .select({ n: sql<number>`count(*)` })
      .from(users)
      .where(
        and(eq(users.workspaceId, workspaceId), eq(users.role, "admin"), ne(users.id, userId), isNull(users.erasedAt)),
      )
      .get();
    if (!others?.n)
      throw badRequest(
        "last_admin",
        "The last admin of a workspace cannot erase themselves; make another user admin first",
      );
  }

  const counts = await runEraseSteps(env, steps, workspaceId, userId);
  await d
    .update(users)
    .set({ email: null, name: null, passwordHash: null, erasedAt: nowIso() })
    .where(eq(users.id, userId))
    .run();
  return { user_id: userId, erased: true, counts };
}

export function refuseSelfErase(callerId: string, subjectId: string): void {
  if (callerId === subjectId) throw badRequest("self_erase", "Use POST /v1/api/me/erase to erase your own account");
}
