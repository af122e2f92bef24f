import { and, eq, isNull } from "drizzle-orm";
import { forgetCredentials } from "../auth/resolve";
import { apiTokens, sessions } from "../db/schema";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";

/** Erasure's first step: revokes the user's personal access tokens and sign-in sessions. */
export async function eraseCredentials(env: Env, workspaceId: string, userId: string) {
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
  forgetCredentials();
  return { tokens: tokens.meta.changes, sessions: signins.meta.changes };
}
