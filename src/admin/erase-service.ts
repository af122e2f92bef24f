import { and, eq, isNull, ne, sql } from "drizzle-orm";
import { auditLog } from "../audit/client";
import { apiTokens, sessions, users } from "../db/schema";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { badRequest, notFound } from "../platform/problem";
import { type ErasureCounts, registerEraseStep, runEraseSteps } from "./erasure";

registerEraseStep("tokens", async (env, workspaceId, userId) => {
  const res = await db(env)
    .update(apiTokens)
    .set({ revokedAt: nowIso() })
    .where(and(eq(apiTokens.workspaceId, workspaceId), eq(apiTokens.userId, userId), isNull(apiTokens.revokedAt)))
    .run();
  return { tokens: res.meta.changes };
});

registerEraseStep("sessions", async (env, workspaceId, userId) => {
  const res = await db(env)
    .update(sessions)
    .set({ revokedAt: nowIso() })
    .where(and(eq(sessions.workspaceId, workspaceId), eq(sessions.userId, userId), isNull(sessions.revokedAt)))
    .run();
  return { sessions: res.meta.changes };
});

export type ErasureSummary = { user_id: string; erased: true; counts: ErasureCounts };

/**
 * Erases a user of the workspace: every registered area removes the user's credentials and
 * data, the audit log redacts the user's details (the chain still verifies), and last the
 * user row is anonymized. Each step is idempotent and the row is anonymized last, so a
 * failure part-way can be retried to completion.
 */
export async function eraseUser(
  env: Env,
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

  const counts = await runEraseSteps(env, workspaceId, userId);
  counts.audit_events_redacted += await auditLog(env, workspaceId).redactUser(userId);
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
