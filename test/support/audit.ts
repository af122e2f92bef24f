import { env } from "cloudflare:workers";
import { count, eq } from "drizzle-orm";
import { auditLog } from "../../durable-objects/audit-log/client";
import { deliverNow } from "../../src/audit/delivery";
import { auditOutbox } from "../../src/db/schema";
import { rememberedEvent } from "../../src/memory/tools";
import { db } from "../../src/platform/db";

/** A workspace's audit events (newest first, all time), optionally of one kind, with details parsed. */
export async function auditEvents(workspaceId: string, kind?: string) {
  await deliverNow(env, workspaceId); // as GET /v1/admin/audit does
  const { events } = await auditLog(env, workspaceId).list({ days: 0, kind }, { page: 1, pageSize: 200 });
  return events.map((e) => ({ ...e, details: JSON.parse(e.details) as Record<string, unknown> }));
}

/** The event `remember` writes, for tests that store a fact without running a turn. */
export const factEvent = (owner: { workspaceId: string; userId: string }) =>
  rememberedEvent(owner, { slug: "assistant" });

/**
 * Waits until a workspace's outbox is empty: the delivery loops of earlier requests have removed
 * every row they appended. A test that edits the object's storage by hand waits for this first,
 * or a row still waiting for its removal is appended again onto the edited chain.
 */
export async function outboxSettled(workspaceId: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [row] = await db(env)
      .select({ n: count() })
      .from(auditOutbox)
      .where(eq(auditOutbox.workspaceId, workspaceId));
    if (!row?.n) return;
    if (Date.now() > deadline) throw new Error(`${row.n} audit outbox rows of ${workspaceId} still wait`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
