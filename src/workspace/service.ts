import { and, eq, gt, isNull, or, sql } from "drizzle-orm";
import { type AuditEventInput, auditInBatch } from "../audit/events";
import { forgetCredentials } from "../auth/resolve";
import { emailSlugs, workspaces } from "../db/schema";
import { db, isUniqueViolation } from "../platform/db";
import { nowIso } from "../platform/env";
import { literalLimit } from "../platform/limit";
import { badRequest, notFound } from "../platform/problem";
import { checkHandleFormat } from "./handle";

/** How long a retired email slug keeps routing to its workspace (and stays unavailable to others). */
export const EMAIL_SLUG_CONTINUITY_DAYS = 30;

export type Availability = { slug: string; available: boolean; reason?: "invalid" | "reserved" | "taken" };

/** Advisory check of a handle against the format, the reserved words and both registries. */
export async function slugAvailability(env: Env, slug: string): Promise<Availability> {
  const format = checkHandleFormat(slug);
  if (!format.ok) return { slug, available: false, reason: format.reason };
  const d = db(env);
  const now = nowIso();
  const [handle, email] = await d.batch([
    d.select({ id: workspaces.id }).from(workspaces).where(eq(workspaces.slug, slug)).limit(literalLimit(1)),
    d
      .select({ slug: emailSlugs.slug })
      .from(emailSlugs)
      .where(and(eq(emailSlugs.slug, slug), or(isNull(emailSlugs.routesUntil), gt(emailSlugs.routesUntil, now))))
      .limit(literalLimit(1)),
  ]);
  if (handle.length || email.length) return { slug, available: false, reason: "taken" };
  return { slug, available: true };
}

export type RenameResult = {
  slug: string;
  previous_slug: string;
  email_slug: string;
  previous_email_slug_routes_until: string;
};

/** 400 unless the slug has the handle format and is not reserved. */
function requireHandleFormat(slug: string): void {
  const format = checkHandleFormat(slug);
  if (format.ok) return;
  throw badRequest(
    format.reason,
    format.reason === "reserved"
      ? `"${slug}" is reserved`
      : "slug must be 3-32 characters of a-z, 0-9 and inner hyphens",
    [{ path: "slug", message: format.reason }],
  );
}

/** The workspace's current handle and email slug; 400 `taken` when the new slug is already its handle. */
async function currentHandles(env: Env, workspaceId: string, slug: string) {
  const ws = await db(env)
    .select({ slug: workspaces.slug, emailSlug: workspaces.emailSlug })
    .from(workspaces)
    .where(eq(workspaces.id, workspaceId))
    .get();
  if (!ws) throw notFound("No such workspace");
  if (ws.slug === slug)
    throw badRequest("taken", "This is already the workspace's handle", [{ path: "slug", message: "taken" }]);
  return ws;
}

/** The rename's statements: the new slug freed and taken, the old email slug kept routing until `routesUntil`. */
function renameStatements(
  env: Env,
  workspaceId: string,
  previousEmailSlug: string,
  result: RenameResult,
  entry: AuditEventInput,
  now: string,
) {
  const d = db(env);
  const { slug, previous_email_slug_routes_until: routesUntil } = result;
  return [
    // Free the slug if it is our own retired one, or anyone's whose window has passed.
    d
      .delete(emailSlugs)
      .where(
        and(
          eq(emailSlugs.slug, slug),
          or(eq(emailSlugs.workspaceId, workspaceId), sql`${emailSlugs.routesUntil} <= ${now}`),
        ),
      ),
    d.update(workspaces).set({ slug, emailSlug: slug }).where(eq(workspaces.id, workspaceId)),
    d
      .update(emailSlugs)
      .set({ routesUntil })
      .where(and(eq(emailSlugs.slug, previousEmailSlug), eq(emailSlugs.workspaceId, workspaceId))),
    d.insert(emailSlugs).values({ slug, workspaceId, createdAt: now }),
    auditInBatch(env, entry),
  ] as const;
}

/**
 * Renames the workspace handle and re-aliases the email slug in one D1 batch. The unique
 * constraints (workspaces.slug, email_slugs.slug) decide races: the loser gets 400 `taken`.
 * The old email slug keeps routing for the continuity window.
 */
export async function renameWorkspace(
  env: Env,
  workspaceId: string,
  slug: string,
  eventOf: (result: RenameResult) => AuditEventInput,
): Promise<RenameResult> {
  requireHandleFormat(slug);
  const ws = await currentHandles(env, workspaceId, slug);

  const now = nowIso();
  const routesUntil = new Date(Date.now() + EMAIL_SLUG_CONTINUITY_DAYS * 86_400_000).toISOString();
  const result = { slug, previous_slug: ws.slug, email_slug: slug, previous_email_slug_routes_until: routesUntil };
  try {
    await db(env).batch(renameStatements(env, workspaceId, ws.emailSlug, result, eventOf(result), now));
    // Callers carry their workspace's slug.
    forgetCredentials();
  } catch (e) {
    if (isUniqueViolation(e))
      throw badRequest("taken", `"${slug}" is already taken`, [{ path: "slug", message: "taken" }]);
    throw e;
  }
  return result;
}
