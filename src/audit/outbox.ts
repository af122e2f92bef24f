import { eq, sql } from "drizzle-orm";
import { auditLog } from "../../durable-objects/audit-log/client";
import { markFailed } from "../../durable-objects/audit-log/outbox";
import { auditOutbox } from "../db/schema";
import { db } from "../platform/db";
import { logError } from "../platform/log";

/**
 * The safety net behind the after-response delivery: asks the audit object of every workspace
 * with rows still in the outbox (a Worker that died before delivering, an object that was
 * unreachable) to deliver them. Returns how many were delivered.
 */
export async function deliverOutbox(env: Env, maxWorkspaces = 100): Promise<number> {
  const waiting = await db(env)
    .selectDistinct({ workspaceId: auditOutbox.workspaceId })
    .from(auditOutbox)
    .limit(maxWorkspaces)
    .all();
  let delivered = 0;
  for (const { workspaceId } of waiting) {
    try {
      delivered += await auditLog(env, workspaceId).deliver(workspaceId);
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
