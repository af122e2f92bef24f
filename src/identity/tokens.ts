import { and, desc, eq, isNull } from "drizzle-orm";
import { type AuditEventInput, auditAlone, auditInBatch } from "../audit/events";
import { forgetCredentials, PAT_PREFIX } from "../auth/resolve";
import { type Role, roleCeiling, type Scope } from "../auth/scopes";
import { apiTokens, users } from "../db/schema";
import { hashToken } from "../platform/crypto";
import { type Db, db, parseJsonArray } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId, randomToken } from "../platform/ids";
import { badRequest, notFound } from "../platform/problem";
import { workspaceRow, workspaceRows } from "../platform/workspace-rows";

export type TokenInfo = {
  id: string;
  name: string;
  scopes: string[];
  user_id: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
};

const toInfo = (t: typeof apiTokens.$inferSelect): TokenInfo => ({
  id: t.id,
  name: t.name,
  scopes: parseJsonArray(t.scopes),
  user_id: t.userId,
  created_at: t.createdAt,
  expires_at: t.expiresAt,
  last_used_at: t.lastUsedAt,
  revoked_at: t.revokedAt,
});

/** A new PAT's secret and the statement that stores its hash (for batches such as signup). */
export function patInsert(
  d: Db,
  p: { workspaceId: string; userId: string; name: string; scopes: readonly Scope[]; expiresAt: string | null },
) {
  const token = randomToken(PAT_PREFIX);
  const row = {
    id: newId(),
    workspaceId: p.workspaceId,
    userId: p.userId,
    name: p.name,
    tokenHash: hashToken(token),
    scopes: JSON.stringify([...new Set(p.scopes)].sort()),
    createdAt: nowIso(),
    expiresAt: p.expiresAt,
  };
  return { token, row, statement: d.insert(apiTokens).values(row) };
}

/** The audit event of a token's creation, the same from the admin API and from the account page. */
export const tokenCreateEvent = (t: TokenInfo) => ({
  kind: "token.create" as const,
  target: `token:${t.id}`,
  subjectUserId: t.user_id,
  details: { name: t.name, scopes: t.scopes, user_id: t.user_id, expires_at: t.expires_at },
});

export async function createToken(
  env: Env,
  workspaceId: string,
  p: { userId: string; name: string; scopes: Scope[]; expiresInDays?: number },
  eventOf: (result: TokenInfo) => AuditEventInput,
): Promise<{ token: string; info: TokenInfo; userRole: Role }> {
  const d = db(env);
  const owner = await d
    .select({ id: users.id, role: users.role })
    .from(users)
    .where(and(eq(users.id, p.userId), eq(users.workspaceId, workspaceId), isNull(users.erasedAt)))
    .get();
  if (!owner) throw notFound("No such user in this workspace");
  const ceiling = roleCeiling(owner.role);
  const beyond = p.scopes.filter((s) => !ceiling.has(s));
  if (beyond.length) {
    throw badRequest("scope_exceeds_role", `The user's role (${owner.role}) cannot hold: ${beyond.join(", ")}`, [
      { path: "scopes", message: `not allowed for role ${owner.role}: ${beyond.join(", ")}` },
    ]);
  }
  const expiresAt = p.expiresInDays ? new Date(Date.now() + p.expiresInDays * 86_400_000).toISOString() : null;
  const { token, row, statement } = patInsert(d, {
    workspaceId,
    userId: owner.id,
    name: p.name,
    scopes: p.scopes,
    expiresAt,
  });
  const info = toInfo({ ...row, revokedAt: null, lastUsedAt: null });
  await d.batch([statement, auditInBatch(env, eventOf(info))]);
  return { token, info, userRole: owner.role };
}

export async function listTokens(env: Env, workspaceId: string): Promise<TokenInfo[]> {
  return (await workspaceRows(env, apiTokens, workspaceId, desc(apiTokens.id))).map(toInfo);
}

/** Revokes a token of the workspace; unknown or foreign ids are not found. Idempotent. */
export async function revokeToken(
  env: Env,
  workspaceId: string,
  id: string,
  eventOf: (result: TokenInfo) => AuditEventInput,
): Promise<TokenInfo> {
  const d = db(env);
  const row = await workspaceRow(env, apiTokens, workspaceId, id);
  if (!row) throw notFound("No such token in this workspace");
  if (row.revokedAt) {
    await auditAlone(env, eventOf(toInfo(row))); // already revoked: the repeated request is still recorded
    return toInfo(row);
  }
  row.revokedAt = nowIso();
  const info = toInfo(row);
  await d.batch([
    d.update(apiTokens).set({ revokedAt: row.revokedAt }).where(eq(apiTokens.id, id)),
    auditInBatch(env, eventOf(info)),
  ]);
  forgetCredentials();
  return info;
}
