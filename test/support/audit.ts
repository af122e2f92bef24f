import { env } from "cloudflare:workers";
import { count, eq } from "drizzle-orm";
import { expect } from "vitest";
import { auditLog } from "../../durable-objects/audit-log/client";
import { deliverNow, deliveryIdle } from "../../src/audit/delivery";
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
 * Waits until a workspace's outbox is empty and no delivery loop of earlier requests runs. A test
 * that edits the object's storage by hand waits for this first: a loop that read a row before
 * another removed it appends it again later, and the object, whose record of that row the edit
 * deleted, would put it onto the edited chain.
 */
export async function outboxSettled(workspaceId: string): Promise<void> {
  const waiting = async () =>
    (await db(env).select({ n: count() }).from(auditOutbox).where(eq(auditOutbox.workspaceId, workspaceId)))[0]?.n;
  await expect.poll(waiting, { timeout: 10_000, interval: 50 }).toBe(0);
  await expect.poll(() => deliveryIdle(workspaceId), { timeout: 10_000, interval: 20 }).toBe(true);
}
