/**
 * Codes, grants and tokens. A grant is one token family: the access and refresh tokens that
 * descend from one authorization code. Every single-use rule (code exchange, refresh
 * rotation) is one conditional UPDATE in a D1 batch (a transaction): the statements that
 * create the new rows select from the row that UPDATE just claimed, so a request that lost
 * a race creates nothing. This module holds what they share: prefixes, lifetimes, the pair
 * of new tokens and the token response.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { utf8ToBytes } from "@noble/hashes/utils.js";
import { eq, type SQL, sql } from "drizzle-orm";
import { grantableFor, type Role } from "../auth/scopes";
import { oauthClients, oauthCodes, oauthGrants, oauthTokens, users } from "../db/schema";
import { hashToken } from "../platform/crypto";
import { type Db, insertSelect, parseJsonArray, preparedFor } from "../platform/db";
import { base64url, newId, randomToken } from "../platform/ids";

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

/** PKCE S256: base64url(SHA-256(code_verifier)) without padding (RFC 7636 §4.2). */
export const pkceChallenge = (verifier: string): string => base64url(sha256(utf8ToBytes(verifier)));

export const iso = (ms: number) => new Date(ms).toISOString();

export const tokenStatements = preparedFor((d) => ({
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

/** A fresh access and refresh token, their row ids and expiry times. */
export function newPair(now: number) {
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
 * The statements, built once per isolate, that insert a pair's two tokens (bound from the
 * pair's own fields and `now`) for the grant `grantId` names in the rows `source` selects
 * (`FROM … WHERE …`): none when it selects nothing, so a request that lost the claim creates
 * no token.
 */
export function preparedPair(d: Db, grantId: SQL, source: SQL) {
  const token = (kind: "access" | "refresh") =>
    insertSelect(
      d,
      oauthTokens,
      {
        id: sql.placeholder(`${kind}Id`),
        grantId,
        kind,
        tokenHash: sql.placeholder(`${kind}Hash`),
        createdAt: sql.placeholder("now"),
        expiresAt: sql.placeholder(`${kind}Expires`),
      },
      source,
    ).prepare();
  return [token("access"), token("refresh")] as const;
}

/**
 * The token response. Its `scope` is what the token can do now: the grant's scopes within the
 * user's current role, never `svc:computer` (a grant made before that rule keeps its row, but
 * no exchange or refresh claims it, and the access token never carries it).
 */
export const tokenResponse = (pair: ReturnType<typeof newPair>, scopesJson: string, role: string): TokenResponse => ({
  access_token: pair.access,
  token_type: "Bearer",
  expires_in: ACCESS_TOKEN_TTL_SECONDS,
  refresh_token: pair.refresh,
  scope: grantableFor(parseJsonArray(scopesJson), role as Role).join(" "),
});
