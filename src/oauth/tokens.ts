/**
 * Codes, grants and tokens. A grant is one token family: the access and refresh tokens that
 * descend from one authorization code. Every single-use rule (code exchange, refresh
 * rotation) is one conditional UPDATE in a D1 batch (a transaction): the statements that
 * create the new rows select from the row that UPDATE just claimed, so a request that lost
 * a race creates nothing.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { utf8ToBytes } from "@noble/hashes/utils.js";
import { eq, type SQL, sql } from "drizzle-orm";
import {
  type AuditEventInput,
  auditInBatch,
  auditStatement,
  jsonBoolean,
  PREVIOUS_STATEMENT_CHANGED,
} from "../audit/events";
import { effectiveScopes, grantableFor, type Role } from "../auth/scopes";
import { oauthClients, oauthCodes, oauthGrants, oauthTokens, users } from "../db/schema";
import { hashToken, timingSafeEqual } from "../platform/crypto";
import { d1Statement, db, parseJsonArray, preparedFor } from "../platform/db";
import { nowIso } from "../platform/env";
import { base64url, newId, randomToken } from "../platform/ids";
import { invalidGrant, invalidTarget } from "./errors";
import type { Introspection } from "./schemas";

export const CODE_PREFIX = "svc_code_";
export const ACCESS_TOKEN_PREFIX = "svc_at_";
export const REFRESH_TOKEN_PREFIX = "svc_rt_";
export const CODE_TTL_SECONDS = 600;
export const ACCESS_TOKEN_TTL_SECONDS = 3600;
export const REFRESH_TOKEN_TTL_SECONDS = 30 * 86_400;

export type TokenResponse = {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  refresh_token: string;
  scope: string;
};
export type GrantRef = { grantId: string; workspaceId: string; userId: string; clientId: string };
export type RevokeReason = "revoked" | "refresh_reuse" | "code_reuse" | "client_deleted" | "user_erased";

/** The tokens of a successful exchange or refresh, and the grant they belong to. */
export type Issued = { body: TokenResponse; grant: GrantRef };

/**
 * The event of a replayed code or rotated refresh token: no signed-in caller, so the actor is
 * the client and the workspace the grant's. `family_revoked` is filled in the revoking batch.
 */
const reuseEvent = (
  clientId: string,
  tokenKind: "code" | "refresh",
  workspaceId = "",
  subjectUserId?: string,
): AuditEventInput => ({
  workspaceId: workspaceId,
  subjectUserId,
  kind: "oauth.token.reuse",
  outcome: "denied",
  actor: { kind: "oauth_client", id: clientId },
  target: `oauth_client:${clientId}`,
  intent: "reuse",
  details: { client_id: clientId, token_kind: tokenKind, family_revoked: false },
});

/** PKCE S256: base64url(SHA-256(code_verifier)) without padding (RFC 7636 §4.2). */
export const pkceChallenge = (verifier: string): string => base64url(sha256(utf8ToBytes(verifier)));

const iso = (ms: number) => new Date(ms).toISOString();

const statements = preparedFor((d) => ({
  code: d
    .select()
    .from(oauthCodes)
    .where(eq(oauthCodes.codeHash, sql.placeholder("hash")))
    .prepare(),
  tokenWithGrant: d
    .select({
      kind: oauthTokens.kind,
      createdAt: oauthTokens.createdAt,
      expiresAt: oauthTokens.expiresAt,
      revokedAt: oauthTokens.revokedAt,
      grantId: oauthGrants.id,
      clientId: oauthGrants.clientId,
      workspaceId: oauthGrants.workspaceId,
      userId: oauthGrants.userId,
      scopes: oauthGrants.scopes,
      resource: oauthGrants.resource,
      grantRevokedAt: oauthGrants.revokedAt,
      email: users.email,
      role: users.role,
      erasedAt: users.erasedAt,
      clientScopes: oauthClients.scopes,
      clientDisabledAt: oauthClients.disabledAt,
    })
    .from(oauthTokens)
    .innerJoin(oauthGrants, eq(oauthGrants.id, oauthTokens.grantId))
    .innerJoin(users, eq(users.id, oauthGrants.userId))
    .innerJoin(oauthClients, eq(oauthClients.clientId, oauthGrants.clientId))
    .where(eq(oauthTokens.tokenHash, sql.placeholder("hash")))
    .prepare(),
}));

// --- authorization codes -------------------------------------------------------------

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

// The event of an issue or rotation is selected from the rows the same batch wrote: only the
// grant knows the workspace and user. `scope` is what the token response says: the grant's
// scopes within the user's role ceiling (admin only while the user is an admin; see grantableFor).
const GRANTED_SCOPE = `(SELECT group_concat(j.value, ' ') FROM json_each(g.scopes) j
  WHERE j.value <> 'svc:computer' AND (j.value <> 'admin' OR u.role = 'admin'))`;
const grantEventFields = {
  "$.target": "'oauth_grant:' || g.id",
  "$.subjectUserId": "g.user_id",
  "$.details.scope": GRANTED_SCOPE,
};

/** The template of a token-endpoint event; the grant's fields are filled in SQL. */
const tokenEvent = (kind: "oauth.token.issue" | "oauth.token.refresh", clientId: string): AuditEventInput => ({
  workspaceId: "",
  kind,
  actor: { kind: "oauth_client", id: clientId },
  intent: kind === "oauth.token.issue" ? "issue" : "rotate",
  details: { client_id: clientId, scope: "" },
});

/** A fresh access and refresh token, their row ids and expiry times. */
function newPair(now: number) {
  const access = randomToken(ACCESS_TOKEN_PREFIX);
  const refresh = randomToken(REFRESH_TOKEN_PREFIX);
  return {
    access,
    refresh,
    accessId: newId(),
    refreshId: newId(),
    accessHash: hashToken(access),
    refreshHash: hashToken(refresh),
    accessExpires: iso(now + ACCESS_TOKEN_TTL_SECONDS * 1000),
    refreshExpires: iso(now + REFRESH_TOKEN_TTL_SECONDS * 1000),
  };
}

/**
 * The token response. Its `scope` is what the token can do now: the grant's scopes within the
 * user's current role, never `svc:computer` (a grant made before that rule keeps its row, but
 * no exchange or refresh claims it, and the access token never carries it).
 */
const tokenResponse = (pair: ReturnType<typeof newPair>, scopesJson: string, role: string): TokenResponse => ({
  access_token: pair.access,
  token_type: "Bearer",
  expires_in: ACCESS_TOKEN_TTL_SECONDS,
  refresh_token: pair.refresh,
  scope: grantableFor(parseJsonArray(scopesJson), role as Role).join(" "),
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
  const code = await statements(env).code.get({ hash: codeHash });
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
    ? await statements(env).tokenWithGrant.get({ hash: oldHash })
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

// --- introspection and revocation ----------------------------------------------------

const INACTIVE: Introspection = { active: false };

/** RFC 7662 for the calling client's own tokens; any other token reads as inactive. */
export async function introspect(env: Env, clientId: string, token: string): Promise<Introspection> {
  if (!token.startsWith(ACCESS_TOKEN_PREFIX) && !token.startsWith(REFRESH_TOKEN_PREFIX)) return INACTIVE;
  const t = await statements(env).tokenWithGrant.get({ hash: hashToken(token) });
  const now = nowIso();
  if (
    !t ||
    t.clientId !== clientId ||
    t.revokedAt ||
    t.grantRevokedAt ||
    t.expiresAt <= now ||
    t.erasedAt ||
    t.clientDisabledAt ||
    !t.email
  ) {
    return INACTIVE;
  }
  const clientAllowed = new Set(parseJsonArray(t.clientScopes));
  const granted = parseJsonArray(t.scopes).filter((s) => clientAllowed.has(s));
  return {
    active: true,
    scope: [...effectiveScopes(granted, t.role as Role)].join(" "),
    client_id: t.clientId,
    username: t.email,
    token_type: "Bearer",
    exp: Math.floor(Date.parse(t.expiresAt) / 1000),
    iat: Math.floor(Date.parse(t.createdAt) / 1000),
    sub: t.userId,
    ...(t.resource ? { aud: t.resource } : {}),
  };
}

/**
 * RFC 7009 for the calling client's own tokens: revokes the token's whole family. Another
 * client's or an unknown token is left alone. Returns the family when this call revoked it.
 */
export async function revokeToken(env: Env, clientId: string, token: string): Promise<GrantRef | null> {
  if (!token.startsWith(ACCESS_TOKEN_PREFIX) && !token.startsWith(REFRESH_TOKEN_PREFIX)) return null;
  const t = await statements(env).tokenWithGrant.get({ hash: hashToken(token) });
  if (!t || t.clientId !== clientId || t.grantRevokedAt) return null;
  const revokeEvent: AuditEventInput = {
    workspaceId: "",
    kind: "oauth.grant.revoke",
    actor: { kind: "oauth_client", id: clientId },
    intent: "revoke",
    details: { client_id: clientId, reason: "revoked", count: 1 },
  };
  return revokeGrant(env, t.grantId, "revoked", { entry: revokeEvent, onlyIfRevoked: true });
}

/**
 * Revokes a grant and every token of it; returns it when it was still live. The event is
 * written in the same batch, filled from the grant's row (workspace, user, target) and
 * `family_revoked` when its details have one; `onlyIfRevoked` skips it when the grant was
 * already revoked.
 */
export async function revokeGrant(
  env: Env,
  grantId: string,
  reason: RevokeReason,
  event: { entry: AuditEventInput; onlyIfRevoked?: boolean },
): Promise<GrantRef | null> {
  const now = nowIso();
  const fields: Record<string, SQL> = { "$.target": sql`'oauth_grant:' || g.id`, "$.subjectUserId": sql`g.user_id` };
  // Right after the grant's UPDATE: whether this batch revoked it.
  if (event.entry.kind === "oauth.token.reuse")
    fields["$.details.family_revoked"] = jsonBoolean(PREVIOUS_STATEMENT_CHANGED);
  const [grant] = await env.DB.batch([
    env.DB.prepare(
      `UPDATE oauth_grants SET revoked_at = ?1, revoke_reason = ?2 WHERE id = ?3 AND revoked_at IS NULL
       RETURNING id, workspace_id, user_id, client_id`,
    ).bind(now, reason, grantId),
    d1Statement(
      env,
      auditInBatch(env, event.entry, {
        from: { source: sql`FROM oauth_grants g WHERE g.id = ${grantId}`, workspaceId: sql`g.workspace_id`, fields },
        onlyIf: event.onlyIfRevoked ? PREVIOUS_STATEMENT_CHANGED : undefined,
      }),
    ),
    env.DB.prepare(`UPDATE oauth_tokens SET revoked_at = ?1 WHERE grant_id = ?2 AND revoked_at IS NULL`).bind(
      now,
      grantId,
    ),
  ]);
  const row = grant?.results[0] as { id: string; workspace_id: string; user_id: string; client_id: string } | undefined;
  return row ? { grantId: row.id, workspaceId: row.workspace_id, userId: row.user_id, clientId: row.client_id } : null;
}

/** The statements that revoke every grant of a deleted client (the first answers the revoked grants). */
export function revokeGrantsOfClient(env: Env, clientId: string, now: string): D1PreparedStatement[] {
  return [
    env.DB.prepare(
      `UPDATE oauth_grants SET revoked_at = ?1, revoke_reason = 'client_deleted' WHERE client_id = ?2 AND revoked_at IS NULL
       RETURNING workspace_id, user_id`,
    ).bind(now, clientId),
    env.DB.prepare(
      `UPDATE oauth_tokens SET revoked_at = ?1 WHERE revoked_at IS NULL AND grant_id IN (SELECT id FROM oauth_grants WHERE client_id = ?2)`,
    ).bind(now, clientId),
    env.DB.prepare(`DELETE FROM oauth_codes WHERE client_id = ?1 AND consumed_at IS NULL`).bind(clientId),
  ];
}

/**
 * Erasure: revokes the user's grants (and so their tokens), forgets their consents and
 * drops their unused codes. Counts revoked grants plus removed consents.
 */
export async function eraseOAuthUser(env: Env, workspaceId: string, userId: string): Promise<{ oauth_grants: number }> {
  const now = nowIso();
  const [grants, , consents] = await env.DB.batch([
    env.DB.prepare(
      `UPDATE oauth_grants SET revoked_at = ?1, revoke_reason = 'user_erased' WHERE workspace_id = ?2 AND user_id = ?3 AND revoked_at IS NULL RETURNING id`,
    ).bind(now, workspaceId, userId),
    env.DB.prepare(
      `UPDATE oauth_tokens SET revoked_at = ?1 WHERE revoked_at IS NULL AND grant_id IN (SELECT id FROM oauth_grants WHERE workspace_id = ?2 AND user_id = ?3)`,
    ).bind(now, workspaceId, userId),
    env.DB.prepare(`DELETE FROM oauth_consents WHERE workspace_id = ?1 AND user_id = ?2 RETURNING id`).bind(
      workspaceId,
      userId,
    ),
    env.DB.prepare(`DELETE FROM oauth_codes WHERE workspace_id = ?1 AND user_id = ?2 AND consumed_at IS NULL`).bind(
      workspaceId,
      userId,
    ),
  ]);
  return { oauth_grants: (grants?.results.length ?? 0) + (consents?.results.length ?? 0) };
}
