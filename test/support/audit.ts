import { env } from "cloudflare:workers";
import { auditLog } from "../../durable-objects/audit-log/client";
import { deliverAudit, outboxEntry } from "../../durable-objects/audit-log/record";

/** A workspace's audit events (newest first, all time), optionally of one kind, with details parsed. */
export async function auditEvents(workspaceId: string, kind?: string) {
  await deliverAudit(env, workspaceId); // as GET /v1/admin/audit does
  const { events } = await auditLog(env, workspaceId).list({ days: 0, kind }, { page: 1, pageSize: 200 });
  return events.map((e) => ({ ...e, details: JSON.parse(e.details) as Record<string, unknown> }));
}

/** The event `remember` writes, for tests that store a fact without running a turn. */
export const factEvent = (owner: { workspaceId: string; userId: string }) => (factId: string) =>
  outboxEntry(owner.workspaceId, {
    kind: "memory.fact.create",
    intent: "remember",
    actor: { kind: "user", id: owner.userId },
    subjectUserId: owner.userId,
    target: `memory_fact:${factId}`,
    details: { agent_slug: "assistant" },
  });
