import { and, asc, eq, isNull } from "drizzle-orm";
import type { User } from "../account/schemas";
import type { Role } from "../auth/scopes";
import { users } from "../db/schema";
import { hashPassword } from "../platform/crypto";
import { db, isUniqueViolation } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { conflict } from "../platform/problem";

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
  try {
    await db(env).insert(users).values(row).run();
  } catch (e) {
    if (isUniqueViolation(e)) throw conflict("email_taken", "A user with this email already exists");
    throw e;
  }
  return toUser(row);
}
