/** Authorization codes: issuing one, and exchanging it for a token family. */
import { auditInBatch, auditStatement } from "../audit/events";
import { oauthCodes } from "../db/schema";
import { hashToken, timingSafeEqual } from "../platform/crypto";
import { d1Statement, db } from "../platform/db";
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

// Claims the code only when every binding verifies; sets the new grant id as the claim mark. A
// `resource` at the token request (?7) may name the code's resource, or bind an unbound code.
const CONSUME_CODE = `UPDATE oauth_codes SET consumed_at = ?1, grant_id = ?2
  WHERE code_hash = ?3 AND consumed_at IS NULL AND expires_at > ?1
    AND client_id = ?4 AND redirect_uri = ?5 AND code_challenge = ?6
    AND (?7 IS NULL OR resource IS NULL OR resource = ?7)
    AND EXISTS (SELECT 1 FROM users WHERE users.id = oauth_codes.user_id AND users.erased_at IS NULL)
  RETURNING scopes, workspace_id, user_id, (SELECT role FROM users WHERE users.id = oauth_codes.user_id) AS role`;
const INSERT_GRANT_FROM_CODE = `INSERT INTO oauth_grants (id, workspace_id, user_id, client_id, scopes, created_at, resource)
  SELECT grant_id, workspace_id, user_id, client_id, scopes, consumed_at, COALESCE(?3, resource) FROM oauth_codes
  WHERE code_hash = ?1 AND grant_id = ?2`;
const INSERT_TOKEN_OF_GRANT = `INSERT INTO oauth_tokens (id, grant_id, kind, token_hash, created_at, expires_at)
  SELECT ?1, id, ?2, ?3, ?4, ?5 FROM oauth_grants WHERE id = ?6`;

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
  const [claimed] = await env.DB.batch([
    env.DB.prepare(CONSUME_CODE).bind(nowIso, grantId, codeHash, clientId, p.redirectUri, challenge, resource),
    env.DB.prepare(INSERT_GRANT_FROM_CODE).bind(codeHash, grantId, resource),
    env.DB.prepare(INSERT_TOKEN_OF_GRANT).bind(
      pair.accessId,
      "access",
      pair.accessHash,
      nowIso,
      pair.accessExpires,
      grantId,
    ),
    env.DB.prepare(INSERT_TOKEN_OF_GRANT).bind(
      pair.refreshId,
      "refresh",
      pair.refreshHash,
      nowIso,
      pair.refreshExpires,
      grantId,
    ),
    auditStatement(env, tokenEvent("oauth.token.issue", clientId), {
      source: "FROM oauth_grants g JOIN users u ON u.id = g.user_id WHERE g.id = ?4",
      workspaceId: "g.workspace_id",
      fields: grantEventFields,
      binds: [grantId],
    }),
  ]);
  const row = claimed?.results[0] as
    | { scopes: string; workspace_id: string; user_id: string; role: string }
    | undefined;
  if (row) {
    return {
      body: tokenResponse(pair, row.scopes, row.role),
      grant: { grantId, workspaceId: row.workspace_id, userId: row.user_id, clientId },
    };
  }

  // Slow path: say why, and detect a replay.
  const code = await tokenStatements(env).code.get({ hash: codeHash });
  if (!code) throw invalidGrant("The authorization code is unknown");
  const clientOk = code.clientId === clientId;
  const redirectOk = code.redirectUri === p.redirectUri;
  const pkceOk = timingSafeEqual(code.codeChallenge, challenge);
  if (code.consumedAt && clientOk && redirectOk && pkceOk) {
    const ref = {
      grantId: code.grantId ?? "",
      workspaceId: code.workspaceId,
      userId: code.userId,
      clientId: code.clientId,
    };
    if (code.grantId) await revokeGrant(env, code.grantId, "code_reuse", { entry: reuseEvent(clientId, "code") });
    else await d1Statement(env, auditInBatch(env, reuseEvent(clientId, "code", ref.workspaceId, ref.userId))).run();
    throw invalidGrant("The authorization code was already used; the tokens issued from it are revoked");
  }
  if (!clientOk) throw invalidGrant("The authorization code was issued to another client");
  if (!redirectOk) throw invalidGrant("redirect_uri does not match the authorization request");
  if (!pkceOk) throw invalidGrant("PKCE verification failed: code_verifier does not match code_challenge");
  if (code.consumedAt) throw invalidGrant("The authorization code was already used");
  if (resource && code.resource && code.resource !== resource)
    throw invalidTarget(`The authorization code was issued for ${code.resource}, not ${resource}`);
  if (code.expiresAt <= nowIso) throw invalidGrant("The authorization code has expired");
  throw invalidGrant("The authorization code is no longer valid");
}
