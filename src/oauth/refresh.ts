/** The `refresh_token` grant: one rotation per token, a replay revokes the family. */
import { auditStatement } from "../audit/events";
import { hashToken } from "../platform/crypto";
import { invalidGrant, invalidTarget } from "./errors";
import { revokeGrant } from "./revocation";
import { grantEventFields, reuseEvent, tokenEvent } from "./token-events";
import { type Issued, iso, newPair, REFRESH_TOKEN_PREFIX, tokenResponse, tokenStatements } from "./token-pairs";

// Claims the refresh token (one winner) and names its successor as the claim mark. The grant
// check is correlated (one primary-key lookup): `grant_id IN (SELECT ... WHERE client_id = ?)`
// built the list of every grant the client ever had on each call. A `resource` (?5) must be
// the family's own: a refresh never moves tokens to another resource.
const ROTATE_REFRESH = `UPDATE oauth_tokens SET revoked_at = ?1, replaced_by = ?2
  WHERE token_hash = ?3 AND kind = 'refresh' AND revoked_at IS NULL AND expires_at > ?1
    AND EXISTS (SELECT 1 FROM oauth_grants g WHERE g.id = oauth_tokens.grant_id AND g.client_id = ?4 AND g.revoked_at IS NULL
      AND (?5 IS NULL OR g.resource = ?5))
  RETURNING grant_id,
    (SELECT scopes FROM oauth_grants WHERE oauth_grants.id = oauth_tokens.grant_id) AS scopes,
    (SELECT workspace_id FROM oauth_grants WHERE oauth_grants.id = oauth_tokens.grant_id) AS workspace_id,
    (SELECT user_id FROM oauth_grants WHERE oauth_grants.id = oauth_tokens.grant_id) AS user_id,
    (SELECT users.role FROM oauth_grants JOIN users ON users.id = oauth_grants.user_id
      WHERE oauth_grants.id = oauth_tokens.grant_id) AS role`;
const INSERT_TOKEN_AFTER_ROTATION = `INSERT INTO oauth_tokens (id, grant_id, kind, token_hash, created_at, expires_at)
  SELECT ?1, grant_id, ?2, ?3, ?4, ?5 FROM oauth_tokens WHERE token_hash = ?6 AND replaced_by = ?7`;

/**
 * `refresh_token` grant: rotates the token (the new pair keeps the grant's scopes). A rotated
 * token presented again revokes the whole family (RFC 9700 §4.14.2) and the reuse is
 * recorded. Failures throw `invalid_grant`.
 */
export async function refreshTokens(
  env: Env,
  clientId: string,
  refreshToken: string,
  resource: string | null = null,
): Promise<Issued> {
  const now = Date.now();
  const nowIso = iso(now);
  const oldHash = hashToken(refreshToken);
  const pair = newPair(now);
  const [rotated] = await env.DB.batch([
    env.DB.prepare(ROTATE_REFRESH).bind(nowIso, pair.refreshId, oldHash, clientId, resource),
    env.DB.prepare(INSERT_TOKEN_AFTER_ROTATION).bind(
      pair.accessId,
      "access",
      pair.accessHash,
      nowIso,
      pair.accessExpires,
      oldHash,
      pair.refreshId,
    ),
    env.DB.prepare(INSERT_TOKEN_AFTER_ROTATION).bind(
      pair.refreshId,
      "refresh",
      pair.refreshHash,
      nowIso,
      pair.refreshExpires,
      oldHash,
      pair.refreshId,
    ),
    auditStatement(env, tokenEvent("oauth.token.refresh", clientId), {
      source: `FROM oauth_tokens t JOIN oauth_grants g ON g.id = t.grant_id JOIN users u ON u.id = g.user_id
        WHERE t.token_hash = ?4 AND t.replaced_by = ?5`,
      workspaceId: "g.workspace_id",
      fields: grantEventFields,
      binds: [oldHash, pair.refreshId],
    }),
  ]);
  const row = rotated?.results[0] as
    | { grant_id: string; scopes: string; workspace_id: string; user_id: string; role: string }
    | undefined;
  if (row) {
    return {
      body: tokenResponse(pair, row.scopes, row.role),
      grant: { grantId: row.grant_id, workspaceId: row.workspace_id, userId: row.user_id, clientId },
    };
  }

  const t = refreshToken.startsWith(REFRESH_TOKEN_PREFIX)
    ? await tokenStatements(env).tokenWithGrant.get({ hash: oldHash })
    : undefined;
  if (t?.kind !== "refresh") throw invalidGrant("The refresh token is unknown");
  if (t.clientId !== clientId) throw invalidGrant("The refresh token was issued to another client");
  if (t.grantRevokedAt) throw invalidGrant("The refresh token has been revoked");
  if (t.revokedAt) {
    await revokeGrant(env, t.grantId, "refresh_reuse", { entry: reuseEvent(clientId, "refresh") });
    throw invalidGrant("The refresh token was already used; every token of its family is revoked");
  }
  if (t.expiresAt <= nowIso) throw invalidGrant("The refresh token has expired");
  if (resource && t.resource !== resource)
    throw invalidTarget(
      t.resource
        ? `The refresh token's tokens are for ${t.resource}, not ${resource}`
        : "The refresh token's tokens are not bound to a resource; authorize again with this resource",
    );
  throw invalidGrant("The refresh token is no longer valid");
}
