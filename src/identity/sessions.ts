import { and, eq, isNull } from "drizzle-orm";
import { type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { sessions, users } from "../db/schema";
import { DUMMY_PASSWORD_HASH, hashToken, verifyPassword } from "../platform/crypto";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId, randomToken } from "../platform/ids";

export const SESSION_TTL_SECONDS = 7 * 24 * 3600;

export type SigninOutcome =
  | { ok: true; userId: string; workspaceId: string; sessionToken: string; sessionId: string }
  | { ok: false; userId?: string; workspaceId?: string };

/**
 * Checks an email and password. Unknown emails cost the same PBKDF2 as known ones and get
 * the same answer, so the response does not tell whether an account exists.
 */
export async function signIn(
  env: Env,
  email: string,
  password: string,
  eventOf: (result: { userId: string; workspaceId: string; sessionId: string }) => AuditEventInput,
): Promise<SigninOutcome> {
  const d = db(env);
  const user = await d
    .select({ id: users.id, workspaceId: users.workspaceId, passwordHash: users.passwordHash })
    .from(users)
    .where(and(eq(users.email, email), isNull(users.erasedAt)))
    .get();
  const valid = await verifyPassword(password, user?.passwordHash ?? DUMMY_PASSWORD_HASH);
  if (!user?.passwordHash || !valid) return { ok: false, userId: user?.id, workspaceId: user?.workspaceId };
  const sessionToken = randomToken("");
  const sessionId = newId();
  await d.batch([
    d.insert(sessions).values({
      id: sessionId,
      workspaceId: user.workspaceId,
      userId: user.id,
      tokenHash: hashToken(sessionToken),
      createdAt: nowIso(),
      expiresAt: new Date(Date.now() + SESSION_TTL_SECONDS * 1000).toISOString(),
    }),
    auditInBatch(env, eventOf({ userId: user.id, workspaceId: user.workspaceId, sessionId })),
  ]);
  return { ok: true, userId: user.id, workspaceId: user.workspaceId, sessionToken, sessionId };
}

type SessionRef = { id: string; userId: string; workspaceId: string };

/**
 * Revokes the session behind a cookie value; returns it when it was live. Its event is
 * written only when this call revoked it (a racing sign-out records nothing).
 */
export async function signOut(
  env: Env,
  sessionToken: string,
  eventOf: (result: SessionRef) => AuditEventInput,
): Promise<SessionRef | undefined> {
  const d = db(env);
  const live = and(eq(sessions.tokenHash, hashToken(sessionToken)), isNull(sessions.revokedAt));
  const session = await d
    .select({ id: sessions.id, userId: sessions.userId, workspaceId: sessions.workspaceId })
    .from(sessions)
    .where(live)
    .get();
  if (!session) return undefined;
  const [revoked] = await d.batch([
    d
      .update(sessions)
      .set({ revokedAt: nowIso() })
      .where(and(eq(sessions.id, session.id), live))
      .returning({ id: sessions.id }),
    auditInBatch(env, eventOf(session), { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
  ]);
  return revoked.length ? session : undefined;
}

/** How recent a sign-in must be to stand in for the password when an action asks for re-authentication. */
export const REAUTH_WINDOW_SECONDS = 10 * 60;

/**
 * Whether the caller proved just now that they are the account's person, not only a holder
 * of one of its tokens: by the account password, or by a sign-in session younger than
 * `REAUTH_WINDOW_SECONDS`. A password given is always checked, even beside a fresh session.
 */
export async function reauthenticated(
  env: Env,
  who: { workspaceId: string; userId: string; auth: "pat" | "oauth" | "session"; credentialId: string },
  password: string | undefined,
): Promise<boolean> {
  const d = db(env);
  if (password !== undefined) {
    const user = await d
      .select({ passwordHash: users.passwordHash })
      .from(users)
      .where(and(eq(users.id, who.userId), eq(users.workspaceId, who.workspaceId), isNull(users.erasedAt)))
      .get();
    const valid = await verifyPassword(password, user?.passwordHash ?? DUMMY_PASSWORD_HASH);
    return !!user?.passwordHash && valid;
  }
  if (who.auth !== "session") return false;
  const session = await d
    .select({ createdAt: sessions.createdAt })
    .from(sessions)
    .where(and(eq(sessions.id, who.credentialId), eq(sessions.userId, who.userId), isNull(sessions.revokedAt)))
    .get();
  return !!session && Date.parse(session.createdAt) > Date.now() - REAUTH_WINDOW_SECONDS * 1000;
}
