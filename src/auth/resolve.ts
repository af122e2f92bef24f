import { and, eq, isNull, sql } from "drizzle-orm";
import { apiTokens, sessions, users, workspaces } from "../db/schema";
import { hashToken } from "../platform/crypto";
import { parseJsonArray, preparedFor } from "../platform/db";
import type { Caller } from "./caller";
import { DEFAULT_GRANT, effectiveScopes, type Role } from "./scopes";

export const PAT_PREFIX = "svc_pat_";
export const SESSION_COOKIE = "svc_session";

/** The user and workspace columns every credential query selects (see `toCaller`). */
export const callerColumns = {
  userId: users.id,
  email: users.email,
  name: users.name,
  role: users.role,
  workspaceId: workspaces.id,
  workspaceName: workspaces.name,
  workspaceSlug: workspaces.slug,
};

// One indexed query per credential kind: token hash → credential, user and workspace.
const statements = preparedFor((d) => ({
  pat: d
    .select({
      ...callerColumns,
      id: apiTokens.id,
      scopes: apiTokens.scopes,
      expiresAt: apiTokens.expiresAt,
      lastUsedAt: apiTokens.lastUsedAt,
    })
    .from(apiTokens)
    .innerJoin(users, eq(users.id, apiTokens.userId))
    .innerJoin(workspaces, eq(workspaces.id, apiTokens.workspaceId))
    .where(and(eq(apiTokens.tokenHash, sql.placeholder("hash")), isNull(apiTokens.revokedAt), isNull(users.erasedAt)))
    .prepare(),
  session: d
    .select({ ...callerColumns, id: sessions.id, expiresAt: sessions.expiresAt, lastUsedAt: sessions.lastUsedAt })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .innerJoin(workspaces, eq(workspaces.id, sessions.workspaceId))
    .where(and(eq(sessions.tokenHash, sql.placeholder("hash")), isNull(sessions.revokedAt), isNull(users.erasedAt)))
    .prepare(),
  patLive: d
    .select({ expiresAt: apiTokens.expiresAt })
    .from(apiTokens)
    .innerJoin(users, eq(users.id, apiTokens.userId))
    .where(and(eq(apiTokens.id, sql.placeholder("id")), isNull(apiTokens.revokedAt), isNull(users.erasedAt)))
    .prepare(),
  touchPat: d
    .update(apiTokens)
    .set({ lastUsedAt: sql`${sql.placeholder("now")}` })
    .where(eq(apiTokens.id, sql.placeholder("id")))
    .prepare(),
  touchSession: d
    .update(sessions)
    .set({ lastUsedAt: sql`${sql.placeholder("now")}` })
    .where(eq(sessions.id, sql.placeholder("id")))
    .prepare(),
}));

export type CallerRow = {
  id: string;
  userId: string;
  email: string | null;
  name: string | null;
  role: Role;
  workspaceId: string;
  workspaceName: string;
  workspaceSlug: string;
  expiresAt: string | null;
};

/** A caller from a credential row; effective scopes are `tokenScopes` ∩ the role's ceiling. */
export function toCaller(
  auth: Caller["auth"],
  row: CallerRow,
  tokenScopes: readonly string[],
  extra: Partial<Caller> = {},
): Caller {
  return {
    auth,
    credentialId: row.id,
    userId: row.userId,
    email: row.email,
    name: row.name,
    role: row.role,
    workspace: { id: row.workspaceId, name: row.workspaceName, slug: row.workspaceSlug },
    scopes: effectiveScopes(tokenScopes, row.role),
    ...extra,
  };
}

const expired = (expiresAt: string | null, now: number) => expiresAt !== null && Date.parse(expiresAt) <= now;

/** `last_used_at` is written at most once a minute per credential. */
const TOUCH_INTERVAL_MS = 60_000;
const stale = (lastUsedAt: string | null, now: number) =>
  !lastUsedAt || now - Date.parse(lastUsedAt) >= TOUCH_INTERVAL_MS;

export type Resolved = { caller: Caller; touch?: () => Promise<unknown> };

/** A kind of bearer token, recognized by its prefix, resolved to a caller (null when unknown, expired or revoked). */
export type BearerKind = {
  prefix: string;
  resolve: (env: Env, token: string, now: number) => Promise<Resolved | null>;
};

/** Personal access tokens; other kinds (the OAuth access token) come from the areas that issue them. */
export const PAT_KIND: BearerKind = {
  prefix: PAT_PREFIX,
  resolve: async (env, token, now) => {
    const s = statements(env);
    const row = await s.pat.get({ hash: hashToken(token) });
    if (!row || expired(row.expiresAt, now)) return null;
    return {
      caller: toCaller("pat", row, parseJsonArray(row.scopes)),
      touch: stale(row.lastUsedAt, now)
        ? () => s.touchPat.run({ id: row.id, now: new Date(now).toISOString() })
        : undefined,
    };
  },
};

/**
 * Whether a personal access token (by id) is still live: not revoked, not expired, its user
 * not erased. For credentials checked long after they were presented (the browser socket).
 */
export async function patStillLive(env: Env, tokenId: string, now = Date.now()): Promise<boolean> {
  const row = await statements(env).patLive.get({ id: tokenId });
  return !!row && !expired(row.expiresAt, now);
}

export async function resolveBearer(
  env: Env,
  kinds: readonly BearerKind[],
  token: string,
  now = Date.now(),
): Promise<Resolved | null> {
  const kind = kinds.find((k) => token.startsWith(k.prefix));
  return kind ? kind.resolve(env, token, now) : null;
}

/** The token of an `Authorization: Bearer <token>` header (RFC 6750 §2.1), or null. */
export function bearerToken(header: string | undefined | null): string | null {
  const match = /^Bearer[ ]+([\x21-\x7e]+)[ ]*$/i.exec(header ?? "");
  return match?.[1] ?? null;
}

export async function resolveSession(env: Env, cookieValue: string, now = Date.now()): Promise<Resolved | null> {
  const s = statements(env);
  const row = await s.session.get({ hash: hashToken(cookieValue) });
  if (!row || expired(row.expiresAt, now)) return null;
  return {
    caller: toCaller("session", row, DEFAULT_GRANT),
    touch: stale(row.lastUsedAt, now)
      ? () => s.touchSession.run({ id: row.id, now: new Date(now).toISOString() })
      : undefined,
  };
}
