import { auditOutbox } from "../../src/db/schema";
import { db } from "../../src/platform/db";
import { nowIso } from "../../src/platform/env";
import { newId } from "../../src/platform/ids";
import { auditLog } from "./client";
import { allowedDetails } from "./policy";
import type { ActorKind, AppendEvent, AuditOutcome } from "./types";

/** An event as its author describes it; `auditEvent` makes it the log's entry. */
export type RecordInput = {
  /** Dotted, e.g. `agent.update`. */
  kind: string;
  actor: { kind: ActorKind; id: string | null };
  outcome?: AuditOutcome;
  /** What was acted on, as `type:id` (ids only, never personal data). */
  target?: string;
  /** The verb; defaults to the last part of `kind`. Never personal data. */
  intent?: string;
  agentId?: string | null;
  conversationId?: string | null;
  /** The user the event is about (for erasure). */
  subjectUserId?: string | null;
  /** Reduced to the kind's allow-list before it leaves the Worker. */
  details?: Record<string, unknown>;
};

export function auditEvent(input: RecordInput): AppendEvent {
  return {
    kind: input.kind,
    outcome: input.outcome ?? "success",
    actorKind: input.actor.kind,
    actorId: input.actor.id,
    agentId: input.agentId ?? null,
    conversationId: input.conversationId ?? null,
    target: input.target ?? "",
    intent: input.intent ?? input.kind.split(".").pop() ?? "",
    subjectUserId: input.subjectUserId ?? null,
    details: allowedDetails(input.kind, input.details),
    occurredAt: nowIso(),
  };
}

/**
 * Records an event in the workspace's chain from anywhere (a route, a Durable Object, a
 * queue consumer, a cron job). If the append fails, the change it records has already
 * happened, so the event is parked in D1's `audit_outbox` and delivered by the cron.
 */
export async function record(env: Env, workspaceId: string, input: RecordInput): Promise<void> {
  const event = auditEvent(input);
  try {
    await auditLog(env, workspaceId).append([event]);
  } catch (error) {
    console.error(
      JSON.stringify({
        level: "error",
        msg: "audit append failed; event parked",
        kind: event.kind,
        error: String(error),
      }),
    );
    await parkEvent(env, workspaceId, event, error);
  }
}

/** Keeps an event whose append failed, for the outbox delivery to append later. */
export async function parkEvent(env: Env, workspaceId: string, event: AppendEvent, error: unknown): Promise<void> {
  await db(env)
    .insert(auditOutbox)
    .values({
      id: newId(),
      workspaceId,
      event: JSON.stringify(event),
      createdAt: nowIso(),
      lastError: String(error).slice(0, 500),
    })
    .run();
}
