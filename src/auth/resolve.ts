import { and, eq, isNull, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn, SQLitePreparedQuery } from "drizzle-orm/sqlite-core";
import { apiTokens, sessions, users, workspaces } from "../db/schema";
import { hashToken } from "../platform/crypto";
import { batchPrepared, type Prepared, parseJsonArray, preparedFor } from "../platform/db";
import type { Caller } from "./caller";
import { DEFAULT_GRANT, effectiveScopes, type Role } from "./scopes";

export const PAT_PREFIX = "svc_pat_";
export const SESSION_COOKIE = "svc_session";

/**
 * A column under a name no other column of its query has: a credential query may run in a D1
 * batch (see `WorkspaceRead`), whose rows come back as objects keyed by column name.
 */
export const named = <T>(column: SQLiteColumn, name: string): SQL.Aliased<T> => sql<T>`${column}`.as(name);

/** The user and workspace columns every credential query selects (see `toCaller`). */
export const callerColumns = {
  userId: named<string>(users.id, "caller_user_id"),
  email: named<string | null>(users.email, "caller_email"),
  name: named<string | null>(users.name, "caller_name"),
  role: named<Role>(users.role, "caller_role"),
  workspaceId: named<string>(workspaces.id, "caller_workspace_id"),
  workspaceName: named<string>(workspaces.name, "caller_workspace_name"),
  workspaceSlug: named<string>(workspaces.slug, "caller_workspace_slug"),
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

/**
 * A route's first read when it depends on nothing but the caller's workspace: a prepared query
 * (built once per isolate) whose one placeholder is `workspaceId`. The credential check sends it
 * in its own D1 batch (one round trip instead of two) once the isolate has seen the token and
 * knows its workspace; the route takes the rows with `prefetched`.
 */
export type WorkspaceRead = (env: Env) => Prepared;

/** What rode along with a credential check: the read's result, for the workspace it was read in. */
export type Along = { read: WorkspaceRead; workspaceId: string; result: unknown };

export type Resolved = {
  caller: Caller;
  touch?: () => Promise<unknown>;
  along?: Along;
  /** When the credential expires (ISO 8601), if it does: a reused check never outlives it. */
  expiresAt?: string | null;
};

/** A read to send with a credential's query, in the workspace the token was last seen in. */
export type AlongRequest = { read: WorkspaceRead; workspaceId: string };

/** A kind of bearer token, recognized by its prefix, resolved to a caller (null when unknown, expired or revoked). */
export type BearerKind = {
  prefix: string;
  resolve: (env: Env, token: string, now: number, along?: AlongRequest) => Promise<Resolved | null>;
};

type RowOf<Q> = Q extends SQLitePreparedQuery<infer C> ? (C["all"] extends readonly (infer R)[] ? R : never) : never;

/**
 * The first row of a credential query, and `along`'s result read in the same D1 batch (a
 * transaction, so both see one state of the database).
 */
export async function credentialRow<Q extends Prepared>(
  env: Env,
  query: Q,
  values: Record<string, unknown>,
  along?: AlongRequest,
): Promise<{ row: RowOf<Q> | undefined; along?: Along }> {
  if (!along) return { row: ((await query.all(values)) as RowOf<Q>[])[0] };
  const [rows, result] = await batchPrepared(env, [query, along.read(env)] as const, {
    ...values,
    workspaceId: along.workspaceId,
  });
  return { row: (rows as RowOf<Q>[])[0], along: { ...along, result } };
}

/** Personal access tokens; other kinds (the OAuth access token) come from the areas that issue them. */
export const PAT_KIND: BearerKind = {
  prefix: PAT_PREFIX,
  resolve: async (env, token, now, alongRequest) => {
    const s = statements(env);
    const { row, along } = await credentialRow(env, s.pat, { hash: hashToken(token) }, alongRequest);
    if (!row || expired(row.expiresAt, now)) return null;
    return {
      caller: toCaller("pat", row, parseJsonArray(row.scopes)),
      touch: stale(row.lastUsedAt, now)
        ? () => s.touchPat.run({ id: row.id, now: new Date(now).toISOString() })
        : undefined,
      along,
      expiresAt: row.expiresAt,
    };
  },
};

/**
 * Per isolate: the workspace of each bearer token (by hash) resolved here, to send a route's
 * `WorkspaceRead` with the token's next check. A token never changes workspace, and a guess
 * is only used when the check in the same batch confirms it; safe to lose.
 */
const tokenWorkspaces = new Map<string, string>();
const TOKEN_WORKSPACES_MAX = 10_000;

/**
 * Per isolate: the callers of bearer tokens (by hash) checked here in the last
 * `CREDENTIAL_REUSE_MS`, so that a conversation's requests (a turn, its resume, the next turn)
 * do not each read the credential from D1 again. Every revocation in this isolate (a token, a
 * grant, a client, an erasure, a workspace's slug) forgets them all at once
 * (`forgetCredentials`); a revocation made in another isolate is honoured here within
 * `CREDENTIAL_REUSE_MS`, and a token's own expiry is never passed.
 */
const credentials = new Map<string, { caller: Caller; until: number }>();
export const CREDENTIAL_REUSE_MS = 5_000;
const CREDENTIALS_MAX = 10_000;

/** Forgets every credential checked in this isolate: called after anything that revokes or changes one. */
export function forgetCredentials(): void {
  credentials.clear();
}

export async function resolveBearer(
  env: Env,
  kinds: readonly BearerKind[],
  token: string,
  now = Date.now(),
  read?: WorkspaceRead,
): Promise<Resolved | null> {
  const kind = kinds.find((k) => token.startsWith(k.prefix));
  if (!kind) return null;
  const key = hashToken(token);
  const known = credentials.get(key);
  if (known && known.until > now) return { caller: known.caller };
  const workspaceId = read ? tokenWorkspaces.get(key) : undefined;
  const resolved = await kind.resolve(env, token, now, read && workspaceId ? { read, workspaceId } : undefined);
  if (!resolved) {
    credentials.delete(key);
    return null;
  }
  if (credentials.size >= CREDENTIALS_MAX) credentials.clear();
  const expiresAt = resolved.expiresAt ? Date.parse(resolved.expiresAt) : Number.POSITIVE_INFINITY;
  credentials.set(key, { caller: resolved.caller, until: Math.min(now + CREDENTIAL_REUSE_MS, expiresAt) });
  if (read && !workspaceId) {
    if (tokenWorkspaces.size >= TOKEN_WORKSPACES_MAX) tokenWorkspaces.clear();
    tokenWorkspaces.set(key, resolved.caller.workspace.id);
  }
  return resolved;
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
