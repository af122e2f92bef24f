import { asc, eq, inArray, sql } from "drizzle-orm";
import { auditLog } from "../../durable-objects/audit-log/client";
import type { AppendEvent } from "../../durable-objects/audit-log/types";
import { auditOutbox } from "../db/schema";
import { db } from "../platform/db";
import { literalLimit } from "../platform/limit";
import { logError } from "../platform/log";

/** How many outbox rows one delivery round reads. */
const OUTBOX_ROUND = 500;

type OutboxRow = { id: string; event: string };

// One JSON parameter for the ids: an IN list binds one variable each, and D1 allows 100.
const idIn = (ids: string[]) => inArray(auditOutbox.id, sql`(SELECT value FROM json_each(${JSON.stringify(ids)}))`);

const removal = (env: Env, ids: string[]) => db(env).delete(auditOutbox).where(idIn(ids));

/**
 * A workspace's undelivered events, oldest first (ids are time-ordered), read in one batch with
 * the removal of the rows the round before delivered: one D1 transaction a round, not two.
 */
async function pendingRows(env: Env, workspaceId: string, removeFirst: string[]): Promise<OutboxRow[]> {
  const read = db(env)
    .select({ id: auditOutbox.id, event: auditOutbox.event })
    .from(auditOutbox)
    .where(eq(auditOutbox.workspaceId, workspaceId))
    .orderBy(asc(auditOutbox.id))
    .limit(literalLimit(OUTBOX_ROUND));
  if (!removeFirst.length) return read.all();
  const [, rows] = await db(env).batch([removal(env, removeFirst), read]);
  return rows;
}

/** Removes outbox rows already in their chain (the object appends a row at most once, so a lost removal costs a redelivery only). */
export async function removeDelivered(env: Env, ids: string[]): Promise<void> {
  if (ids.length) await removal(env, ids).run();
}

/** Counts a failed attempt on rows that stay for the next delivery: these rows, or all of a workspace's. */
async function markFailed(env: Env, rows: string[] | { workspaceId: string }, error: unknown): Promise<void> {
  if (Array.isArray(rows) && !rows.length) return;
  await db(env)
    .update(auditOutbox)
    .set({ attempts: sql`${auditOutbox.attempts} + 1`, lastError: String(error).slice(0, 500) })
    .where(Array.isArray(rows) ? idIn(rows) : eq(auditOutbox.workspaceId, rows.workspaceId))
    .run();
}

/**
 * Rows appended to a workspace's chain whose removal from the outbox is left to the next read
 * (see `pendingRows`): a delivery loop hands the same one to each of its rounds and removes
 * what is left when it ends.
 */
export type Unremoved = { ids: string[] };

/**
 * Moves a workspace's outbox rows (each committed in D1 with the change it records) into its
 * chain, oldest first, and removes them from the outbox; returns how many. The object appends
 * a row at most once (by its id), so a row whose removal was lost, or that two Workers deliver
 * at once, lands once. A row the object refuses stays with its error and the rest go on; an
 * object that cannot be reached throws, and every row stays for the next delivery. With
 * `unremoved`, the rows of its last round stay there for the caller to remove, with its next
 * read or by itself.
 */
export async function deliverWorkspace(env: Env, workspaceId: string, unremoved?: Unremoved): Promise<number> {
  const left = unremoved ?? { ids: [] };
  try {
    return await deliverRounds(env, workspaceId, left);
  } finally {
    if (!unremoved) await removeDelivered(env, left.ids);
  }
}

async function deliverRounds(env: Env, workspaceId: string, left: Unremoved): Promise<number> {
  let delivered = 0;
  for (;;) {
    const rows = await pendingRows(env, workspaceId, left.ids);
    left.ids = [];
    if (!rows.length) return delivered;
    const { done, failed, lastError } = await appendRows(env, workspaceId, rows);
    left.ids = done;
    delivered += done.length;
    if (failed.length) {
      await markFailed(env, failed, lastError);
      return delivered;
    }
    if (rows.length < OUTBOX_ROUND) return delivered;
  }
}

type Round = { done: string[]; failed: string[]; lastError: unknown };

/** Appends a round of rows in one call; if the object refuses it, row by row so a bad one fails alone. */
async function appendRows(env: Env, workspaceId: string, rows: OutboxRow[]): Promise<Round> {
  const round: Round = { done: [], failed: [], lastError: null };
  const events: AppendEvent[] = [];
  for (const row of rows) {
    try {
      events.push({ ...(JSON.parse(row.event) as AppendEvent), outboxId: row.id });
    } catch (error) {
      round.failed.push(row.id);
      round.lastError = error;
    }
  }
  if (!events.length) return round;
  const log = auditLog(env, workspaceId);
  try {
    await log.append(events);
    round.done.push(...events.map((e) => e.outboxId!));
    return round;
  } catch (error) {
    if (!refusedByObject(error)) throw error;
    if (events.length === 1) return { ...round, failed: [...round.failed, events[0]!.outboxId!], lastError: error };
  }
  for (const e of events) {
    try {
      await log.append([e]);
      round.done.push(e.outboxId!);
    } catch (error) {
      if (!refusedByObject(error)) throw error;
      round.failed.push(e.outboxId!);
      round.lastError = error;
    }
  }
  return round;
}

/** Thrown by the object's own code (a row it cannot append), not by the way to it (documented as `.remote`). */
const refusedByObject = (error: unknown) => (error as { remote?: boolean } | null)?.remote === true;

/**
 * The safety net behind the after-response delivery: delivers the rows still in the outbox of
 * every workspace that has some (a Worker that died before delivering, an object that was
 * unreachable). Returns how many were delivered.
 */
export async function deliverOutbox(env: Env, maxWorkspaces = 100): Promise<number> {
  const waiting = await db(env)
    .selectDistinct({ workspaceId: auditOutbox.workspaceId })
    .from(auditOutbox)
    .limit(literalLimit(maxWorkspaces))
    .all();
  let delivered = 0;
  for (const { workspaceId } of waiting) {
    try {
      delivered += await deliverWorkspace(env, workspaceId);
    } catch (e) {
      logError("audit outbox delivery failed", e, { workspace_id: workspaceId });
      await markFailed(env, { workspaceId }, e);
    }
  }
  return delivered;
}

/** How many of the workspace's events wait in the outbox, not yet in its chain. */
export async function pendingCount(env: Env, workspaceId: string): Promise<number> {
  const row = await db(env)
    .select({ n: sql<number>`count(*)` })
    .from(auditOutbox)
    .where(eq(auditOutbox.workspaceId, workspaceId))
    .get();
  return row?.n ?? 0;
}
