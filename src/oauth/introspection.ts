/** RFC 7662 token introspection. */
import { effectiveScopes, type Role } from "../auth/scopes";
import { hashToken } from "../platform/crypto";
import { parseJsonArray } from "../platform/db";
import { nowIso } from "../platform/env";
import type { Introspection } from "./schemas";
import { ACCESS_TOKEN_PREFIX, REFRESH_TOKEN_PREFIX, tokenStatements } from "./token-pairs";

const INACTIVE: Introspection = { active: false };

/** RFC 7662 for the calling client's own tokens; any other token reads as inactive. */
export async function introspect(env: Env, clientId: string, token: string): Promise<Introspection> {
  if (!token.startsWith(ACCESS_TOKEN_PREFIX) && !token.startsWith(REFRESH_TOKEN_PREFIX)) return INACTIVE;
  const t = await tokenStatements(env).tokenWithGrant.get({ hash: hashToken(token) });
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
