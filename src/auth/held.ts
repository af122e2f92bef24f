import { and, eq, gt, isNull, or, sql } from "drizzle-orm";
import { apiTokens, oauthClients, oauthGrants, oauthTokens, sessions, users } from "../db/schema";
import { batchPrepared, preparedFor } from "../platform/db";
import { literalLimit } from "../platform/limit";
import type { Caller } from "./caller";

/**
 * A credential that something long-lived was opened with (a live socket, the browser's
 * connection): it is checked once when it opens, and again while it stays open, so a
 * revocation reaches it too.
 */
export type HeldCredential = { kind: Caller["auth"]; id: string };

/**
 * The check a request would make of a credential, by its row id (placeholders `id` and `now`):
 * not revoked, not expired, its user not erased; an OAuth access token's grant and client too.
 * Prepared once per isolate, one statement per kind.
 */
const statements = preparedFor((d) => {
  const one = { one: sql<number>`1` };
  const id = sql.placeholder("id");
  const now = sql.placeholder("now");
  return {
    pat: d
      .select(one)
      .from(apiTokens)
      .innerJoin(users, eq(users.id, apiTokens.userId))
      .where(
        and(
          eq(apiTokens.id, id),
          isNull(apiTokens.revokedAt),
          isNull(users.erasedAt),
          or(isNull(apiTokens.expiresAt), gt(apiTokens.expiresAt, now)),
        ),
      )
      .limit(literalLimit(1))
      .prepare(),
    session: d
      .select(one)
      .from(sessions)
      .innerJoin(users, eq(users.id, sessions.userId))
      .where(and(eq(sessions.id, id), isNull(sessions.revokedAt), isNull(users.erasedAt), gt(sessions.expiresAt, now)))
      .limit(literalLimit(1))
      .prepare(),
    oauth: d
      .select(one)
      .from(oauthTokens)
      .innerJoin(oauthGrants, eq(oauthGrants.id, oauthTokens.grantId))
      .innerJoin(users, eq(users.id, oauthGrants.userId))
      .innerJoin(oauthClients, eq(oauthClients.clientId, oauthGrants.clientId))
      .where(
        and(
          eq(oauthTokens.id, id),
          isNull(oauthTokens.revokedAt),
          isNull(oauthGrants.revokedAt),
          isNull(users.erasedAt),
          isNull(oauthClients.disabledAt),
          gt(oauthTokens.expiresAt, now),
        ),
      )
      .limit(literalLimit(1))
      .prepare(),
  };
});

/** Which of `held` still authenticate, in their order: one D1 round trip. */
export async function stillLive(env: Env, held: readonly HeldCredential[], now = Date.now()): Promise<boolean[]> {
  if (!held.length) return [];
  const s = statements(env);
  const at = new Date(now).toISOString();
  const results = await batchPrepared(
    env,
    held.map((h) => s[h.kind]),
    held.map((h) => ({ id: h.id, now: at })),
  );
  return results.map((rows) => (rows as unknown[]).length > 0);
}
