/** Authorization codes: issuing one, and exchanging it for a token family. */
import { and, eq, exists, gt, isNull, or, sql } from "drizzle-orm";
import { auditInBatch, auditValues, preparedAuditInBatch } from "../audit/events";
import { oauthCodes, oauthGrants, users } from "../db/schema";
import { hashToken, timingSafeEqual } from "../platform/crypto";
import { batchPrepared, type Db, db, insertSelect, preparedFor } from "../platform/db";
import { newId, randomToken } from "../platform/ids";
import { invalidGrant, invalidTarget } from "./errors";
import { revokeGrant } from "./revocation";
import { grantEventFields, reuseEvent, tokenEvent } from "./token-events";
import {
  CODE_PREFIX,
  CODE_TTL_SECONDS,
  type Issued,
  iso,
  newPair,
  pkceChallenge,
  preparedPair,
  tokenResponse,
  tokenStatements,
} from "./token-pairs";

export async function issueCode(
  env: Env,
  p: {
    clientId: string;
    workspaceId: string;
    userId: string;
    redirectUri: string;
    scopes: readonly string[];
    codeChallenge: string;
    resource?: string | null;
  },
): Promise<string> {
  const code = randomToken(CODE_PREFIX);
  const now = Date.now();
  await db(env)
    .insert(oauthCodes)
    .values({
      id: newId(),
      codeHash: hashToken(code),
      clientId: p.clientId,
      workspaceId: p.workspaceId,
      userId: p.userId,
      redirectUri: p.redirectUri,
      scopes: JSON.stringify(p.scopes),
      codeChallenge: p.codeChallenge,
      resource: p.resource ?? null,
      createdAt: iso(now),
      expiresAt: iso(now + CODE_TTL_SECONDS * 1000),
    })
    .run();
  return code;
}

const ph = sql.placeholder;

/**
 * Claims the code only when every binding verifies; sets the new grant id as the claim mark. A
 * `resource` at the token request may name the code's resource, or bind an unbound code.
 */
function consumeCode(d: Db) {
  const liveUser = d
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.id, oauthCodes.userId), isNull(users.erasedAt)));
  return d
    .update(oauthCodes)
    .set({ consumedAt: sql`${ph("now")}`, grantId: sql`${ph("grantId")}` })
    .where(
      and(
        eq(oauthCodes.codeHash, ph("codeHash")),
        isNull(oauthCodes.consumedAt),
        gt(oauthCodes.expiresAt, ph("now")),
        eq(oauthCodes.clientId, ph("clientId")),
        eq(oauthCodes.redirectUri, ph("redirectUri")),
        eq(oauthCodes.codeChallenge, ph("challenge")),
        or(sql`${ph("resource")} IS NULL`, isNull(oauthCodes.resource), eq(oauthCodes.resource, ph("resource"))),
        exists(liveUser),
      ),
    )
    .returning({
      scopes: oauthCodes.scopes,
      workspaceId: oauthCodes.workspaceId,
      userId: oauthCodes.userId,
      // A subquery builder, so that RETURNING keeps its columns qualified.
      role: sql<string>`${d.select({ role: users.role }).from(users).where(eq(users.id, oauthCodes.userId))}`,
    })
    .prepare();
}

/** The grant the code just claimed, from the code's row. */
const grantFromCode = (d: Db) =>
  insertSelect(
    d,
    oauthGrants,
    {
      id: sql`${oauthCodes.grantId}`,
      workspaceId: sql`${oauthCodes.workspaceId}`,
      userId: sql`${oauthCodes.userId}`,
      clientId: sql`${oauthCodes.clientId}`,
      scopes: sql`${oauthCodes.scopes}`,
      createdAt: sql`${oauthCodes.consumedAt}`,
      resource: sql`COALESCE(${ph("resource")}, ${oauthCodes.resource})`,
    },
    sql`FROM ${oauthCodes} WHERE ${and(eq(oauthCodes.codeHash, ph("codeHash")), eq(oauthCodes.grantId, ph("grantId")))}`,
  ).prepare();

// Built once per isolate, as the refresh grant's (`npm run bench -- refresh`): built on each
// request, the queries cost more than the rest of the exchange.
const exchange = preparedFor((d) => {
  const thisGrant = eq(oauthGrants.id, ph("grantId"));
  return [
    consumeCode(d),
    grantFromCode(d),
    ...preparedPair(d, sql`${oauthGrants.id}`, sql`FROM ${oauthGrants} WHERE ${thisGrant}`),
    preparedAuditInBatch(d, {
      from: {
        source: sql`FROM ${oauthGrants} JOIN ${users} ON ${users.id} = ${oauthGrants.userId} WHERE ${thisGrant}`,
        workspaceId: sql`${oauthGrants.workspaceId}`,
        fields: grantEventFields,
      },
    }),
  ] as const;
});

/**
 * `authorization_code` grant. The client is already authenticated. A code presented again
 * with bindings that verify is a replay: the family it created is revoked (RFC 9700 §4.5)
 * and the reuse recorded. Failures throw `invalid_grant`.
 */
export async function exchangeCode(
  env: Env,
  clientId: string,
  p: { code: string; codeVerifier: string; redirectUri: string; resource?: string | null },
): Promise<Issued> {
  const now = Date.now();
  const nowIso = iso(now);
  const codeHash = hashToken(p.code);
  const challenge = pkceChallenge(p.codeVerifier);
  const grantId = newId();
  const pair = newPair(now);
  const resource = p.resource ?? null;
  const [[row]] = await batchPrepared(env, exchange(env), {
    ...pair,
    now: nowIso,
    grantId,
    codeHash,
    clientId,
    redirectUri: p.redirectUri,
    challenge,
    resource,
    ...auditValues(env, tokenEvent("oauth.token.issue", clientId)),
  });
  if (row) {
    return {
      body: tokenResponse(pair, row.scopes, row.role),
      grant: { grantId, workspaceId: row.workspaceId, userId: row.userId, clientId },
    };
  }

  return refuseExchange(env, clientId, { ...p, codeHash, challenge, resource, nowIso });
}

type StoredCode = typeof oauthCodes.$inferSelect;

/** A replayed code: the family it created is revoked (or, with none, the reuse recorded). */
async function revokeReplayedCode(env: Env, code: StoredCode, clientId: string): Promise<void> {
  const ref = {
    grantId: code.grantId ?? "",
    workspaceId: code.workspaceId,
    userId: code.userId,
    clientId: code.clientId,
  };
  if (code.grantId) await revokeGrant(env, code.grantId, "code_reuse", { entry: reuseEvent(clientId, "code") });
  else await auditInBatch(env, reuseEvent(clientId, "code", ref.workspaceId, ref.userId)).run();
}

/** The slow path of a code the exchange did not claim: says why, and detects a replay. */
async function refuseExchange(
  env: Env,
  clientId: string,
  p: { redirectUri: string; codeHash: string; challenge: string; resource: string | null; nowIso: string },
): Promise<never> {
  const { challenge, resource } = p;
  const code = await tokenStatements(env).code.get({ hash: p.codeHash });
  if (!code) throw invalidGrant("The authorization code is unknown");
  const clientOk = code.clientId === clientId;
  const redirectOk = code.redirectUri === p.redirectUri;
  const pkceOk = timingSafeEqual(code.codeChallenge, challenge);
  if (code.consumedAt && clientOk && redirectOk && pkceOk) {
    await revokeReplayedCode(env, code, clientId);
    throw invalidGrant("The authorization code was already used; the tokens issued from it are revoked");
  }
  if (!clientOk) throw invalidGrant("The authorization code was issued to another client");
  if (!redirectOk) throw invalidGrant("redirect_uri does not match the authorization request");
  if (!pkceOk) throw invalidGrant("PKCE verification failed: code_verifier does not match code_challenge");
  if (code.consumedAt) throw invalidGrant("The authorization code was already used");
  if (resource && code.resource && code.resource !== resource)
    throw invalidTarget(`The authorization code was issued for ${code.resource}, not ${resource}`);
  if (code.expiresAt <= p.nowIso) throw invalidGrant("The authorization code has expired");
  throw invalidGrant("The authorization code is no longer valid");
}
