import { asc, eq, inArray, sql } from "drizzle-orm";
import { auditOutbox } from "../../src/db/schema";
import { db } from "../../src/platform/db";

/** How many outbox rows one delivery round reads. */
export const OUTBOX_ROUND = 500;

export type OutboxRow = { id: string; event: string };

/** A workspace's undelivered events, oldest first (ids are time-ordered). */
export function pendingRows(env: Env, workspaceId: string, limit = OUTBOX_ROUND): Promise<OutboxRow[]> {
  return db(env)
    .select({ id: auditOutbox.id, event: auditOutbox.event })
    .from(auditOutbox)
    .where(eq(auditOutbox.workspaceId, workspaceId))
    .orderBy(asc(auditOutbox.id))
    .limit(limit)
    .all();
}

// One JSON parameter for the ids: an IN list binds one variable each, and D1 allows 100.
const idIn = (ids: string[]) => inArray(auditOutbox.id, sql`(SELECT value FROM json_each(${JSON.stringify(ids)}))`);

export async function removeDelivered(env: Env, ids: string[]): Promise<void> {
  if (ids.length) await db(env).delete(auditOutbox).where(idIn(ids)).run();
}

/** Counts a failed attempt on rows that stay for the next delivery: these rows, or all of a workspace's. */
export async function markFailed(env: Env, rows: string[] | { workspaceId: string }, error: unknown): Promise<void> {
  if (Array.isArray(rows) && !rows.length) return;
  await db(env)
    .update(auditOutbox)
    .set({ attempts: sql`${auditOutbox.attempts} + 1`, lastError: String(error).slice(0, 500) })
    .where(Array.isArray(rows) ? idIn(rows) : eq(auditOutbox.workspaceId, rows.workspaceId))
    .run();
}
