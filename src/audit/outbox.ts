import { asc, eq, sql } from "drizzle-orm";
import { auditLog } from "../../durable-objects/audit-log/client";
import type { AppendEvent } from "../../durable-objects/audit-log/types";
import { auditOutbox } from "../db/schema";
import { db } from "../platform/db";

/**
 * Delivers parked events, oldest first, one batch per workspace (in its original order);
 * a delivered row is deleted, a failing workspace's rows stay for the next run.
 * Returns how many were delivered.
 */
export async function deliverOutbox(env: Env, limit = 500): Promise<number> {
  const d = db(env);
  const rows = await d.select().from(auditOutbox).orderBy(asc(auditOutbox.id)).limit(limit).all();
  const byWorkspace = Map.groupBy(rows, (r) => r.workspaceId);
  // One JSON parameter for the ids: an IN list binds one variable each, and D1 allows 100.
  const idIn = (ids: string[]) => sql`${auditOutbox.id} IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`;
  let delivered = 0;
  for (const [workspaceId, parked] of byWorkspace) {
    const ids = parked.map((r) => r.id);
    try {
      await auditLog(env, workspaceId).append(parked.map((r) => JSON.parse(r.event) as AppendEvent));
      await d.delete(auditOutbox).where(idIn(ids)).run();
      delivered += ids.length;
    } catch (e) {
      console.error(
        JSON.stringify({
          level: "error",
          msg: "audit outbox delivery failed",
          workspace_id: workspaceId,
          error: String(e),
        }),
      );
      await d
        .update(auditOutbox)
        .set({ attempts: sql`${auditOutbox.attempts} + 1`, lastError: String(e).slice(0, 500) })
        .where(idIn(ids))
        .run();
    }
  }
  return delivered;
}

export async function parkedCount(env: Env, workspaceId: string): Promise<number> {
  const row = await db(env)
    .select({ n: sql<number>`count(*)` })
    .from(auditOutbox)
    .where(eq(auditOutbox.workspaceId, workspaceId))
    .get();
  return row?.n ?? 0;
}
