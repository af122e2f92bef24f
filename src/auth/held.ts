import { and, eq, gt, isNull, or, sql } from "drizzle-orm";
import { apiTokens, oauthClients, oauthGrants, oauthTokens, sessions, users } from "../db/schema";
import { type Db, db } from "../platform/db";
import type { Caller } from "./caller";

/**
 * A credential that something long-lived was opened with (a live socket): it is checked once
 * when it opens, and again while it stays open, so a revocation reaches it too.
 */
export type HeldCredential = { kind: Caller["auth"]; id: string };

/** The check a request would make of the credential, by its row id: not revoked, not expired, its user not erased. */
function stillLiveQuery(d: Db, held: HeldCredential, now: string) {
  const one = { one: sql<number>`1` };
  switch (held.kind) {
    case "pat":
      return d
        .select(one)
        .from(apiTokens)
        .innerJoin(users, eq(users.id, apiTokens.userId))
        .where(
          and(
            eq(apiTokens.id, held.id),
            isNull(apiTokens.revokedAt),
            isNull(users.erasedAt),
            or(isNull(apiTokens.expiresAt), gt(apiTokens.expiresAt, now)),
          ),
        );
    case "session":
      return d
        .select(one)
        .from(sessions)
        .innerJoin(users, eq(users.id, sessions.userId))
        .where(
          and(
            eq(sessions.id, held.id),
            isNull(sessions.revokedAt),
            isNull(users.erasedAt),
            gt(sessions.expiresAt, now),
          ),
        );
    case "oauth":
      return d
        .select(one)
        .from(oauthTokens)
        .innerJoin(oauthGrants, eq(oauthGrants.id, oauthTokens.grantId))
        .innerJoin(users, eq(users.id, oauthGrants.userId))
        .innerJoin(oauthClients, eq(oauthClients.clientId, oauthGrants.clientId))
        .where(
          and(
            eq(oauthTokens.id, held.id),
            isNull(oauthTokens.revokedAt),
            isNull(oauthGrants.revokedAt),
            isNull(users.erasedAt),
            isNull(oauthClients.disabledAt),
            gt(oauthTokens.expiresAt, now),
          ),
        );
  }
}

/** Which of `held` still authenticate, in their order: one D1 round trip. */
export async function stillLive(env: Env, held: readonly HeldCredential[], now = Date.now()): Promise<boolean[]> {
  if (!held.length) return [];
  const d = db(env);
  const at = new Date(now).toISOString();
  const [first, ...rest] = held.map((h) => stillLiveQuery(d, h, at).limit(1));
  const results = await d.batch([first!, ...rest]);
  return results.map((rows) => rows.length > 0);
}
