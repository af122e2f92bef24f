import { env } from "cloudflare:workers";
import { auditLog } from "../../durable-objects/audit-log/client";
import { deliverNow } from "../../src/audit/delivery";
import { rememberedEvent } from "../../src/memory/tools";

/** A workspace's audit events (newest first, all time), optionally of one kind, with details parsed. */
export async function auditEvents(workspaceId: string, kind?: string) {
  await deliverNow(env, workspaceId); // as GET /v1/admin/audit does
  const { events } = await auditLog(env, workspaceId).list({ days: 0, kind }, { page: 1, pageSize: 200 });
  return events.map((e) => ({ ...e, details: JSON.parse(e.details) as Record<string, unknown> }));
}

/** The event `remember` writes, for tests that store a fact without running a turn. */
export const factEvent = (owner: { workspaceId: string; userId: string }) =>
  rememberedEvent(owner, { slug: "assistant" });
