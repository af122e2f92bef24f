import { and, asc, eq, isNull, ne, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { type AuditEventInput, auditInBatch } from "../audit/events";
import { forgetCredentials } from "../auth/resolve";
import type { Role } from "../auth/scopes";
import { users } from "../db/schema";
import { hashPassword } from "../platform/crypto";
import { type Db, db, isUniqueViolation } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { conflict } from "../platform/problem";
import type { User } from "./schemas";

export const toUser = (u: typeof users.$inferSelect): User => ({
  id: u.id,
  email: u.email,
  name: u.name,
  role: u.role,
  created_at: u.createdAt,
});

export async function listUsers(env: Env, workspaceId: string): Promise<User[]> {
  const rows = await db(env)
    .select()
    .from(users)
    .where(and(eq(users.workspaceId, workspaceId), isNull(users.erasedAt)))
    .orderBy(asc(users.id))
    .all();
  return rows.map(toUser);
}

/** Adds a user to the workspace; without a password the user can sign in only once one is set. */
export async function createUser(
  env: Env,
  workspaceId: string,
  p: { email: string; name?: string; password?: string; role: Role },
  eventOf: (result: User) => AuditEventInput,
): Promise<User> {
  const row = {
    id: newId(),
    workspaceId,
    email: p.email,
    name: p.name ?? null,
    role: p.role,
    passwordHash: p.password ? await hashPassword(p.password) : null,
    createdAt: nowIso(),
    erasedAt: null,
  };
  const d = db(env);
  try {
    await d.batch([d.insert(users).values(row), auditInBatch(env, eventOf(toUser(row)))]);
  } catch (e) {
    if (isUniqueViolation(e)) throw conflict("email_taken", "A user with this email already exists");
    throw e;
  }
  return toUser(row);
}

/** The statement that adds a user, for batches that create more than the user (sign-up). */
export const userInsert = (d: Db, row: typeof users.$inferInsert) => d.insert(users).values(row);

/** A user of the workspace who has not been erased. */
export async function liveUser(env: Env, workspaceId: string, userId: string) {
  return db(env)
    .select({ id: users.id, role: users.role })
    .from(users)
    .where(and(eq(users.id, userId), eq(users.workspaceId, workspaceId), isNull(users.erasedAt)))
    .get();
}

/** How many admins besides `userId` the workspace has. */
export async function otherAdmins(env: Env, workspaceId: string, userId: string): Promise<number> {
  const row = await db(env)
    .select({ n: sql<number>`count(*)` })
    .from(users)
    .where(
      and(eq(users.workspaceId, workspaceId), eq(users.role, "admin"), ne(users.id, userId), isNull(users.erasedAt)),
    )
    .get();
  return row?.n ?? 0;
}

/** The last step of erasure: the row stays (ids in the audit chain point at it) without personal data. */
export async function anonymizeUser(env: Env, userId: string, alsoCommit: BatchItem<"sqlite">): Promise<void> {
  const d = db(env);
  await d.batch([
    d
      .update(users)
      .set({ email: null, name: null, passwordHash: null, erasedAt: nowIso() })
      .where(eq(users.id, userId)),
    alsoCommit,
  ]);
  forgetCredentials();
}
