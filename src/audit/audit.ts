import type { Context } from "hono";
import type { ActorKind, AppendEvent, AuditOutcome } from "../../durable-objects/audit-log/types";
import type { Caller } from "../auth/caller";
import type { AppEnv } from "../platform/env";
import { auditLog } from "./client";
import { parkEvent } from "./outbox";
import { allowedDetails } from "./policy";

export type AuditInput = {
  /** Dotted, e.g. `agent.update`. */
  kind: string;
  outcome?: AuditOutcome;
  /** What was acted on, as `type:id` (ids only, never personal data). */
  target?: string;
  /** The verb or action (never personal data). */
  intent?: string;
  agentId?: string | null;
  conversationId?: string | null;
  /** The user the event is about (for erasure). */
  subjectUserId?: string | null;
  /** Reduced to the kind's allow-list before it leaves the Worker. */
  details?: Record<string, unknown>;
  /** Defaults to the authenticated caller. */
  actor?: { kind: ActorKind; id: string | null };
  /** Defaults to the caller's workspace. */
  workspaceId?: string;
};

const ACTOR_KIND: Record<Caller["auth"], ActorKind> = { pat: "token", session: "user", oauth: "oauth_client" };

/**
 * Records an audit event in the workspace's chain, awaited in the same request. Every
 * state-changing route calls this. If the append fails, the event is parked in the D1
 * outbox (delivered by the scheduled handler) so a committed change never loses its event.
 */
export async function audit(c: Context<AppEnv>, input: AuditInput): Promise<void> {
  const caller = c.get("caller") as Caller | undefined;
  const workspaceId = input.workspaceId ?? caller?.workspace.id;
  if (!workspaceId) throw new Error(`audit event ${input.kind} has no workspace`);
  const actor =
    input.actor ??
    (caller ? { kind: ACTOR_KIND[caller.auth], id: caller.userId } : { kind: "system" as const, id: null });
  await record(c.env, workspaceId, actor, input, c.get("requestId"));
}

/**
 * The same for service code that runs without a request (a lazy grant made while another
 * area checks credits): the actor is the system unless given.
 */
export async function auditWithoutRequest(
  env: Env,
  workspaceId: string,
  input: Omit<AuditInput, "workspaceId">,
): Promise<void> {
  await record(env, workspaceId, input.actor ?? { kind: "system", id: null }, input, undefined);
}

async function record(
  env: Env,
  workspaceId: string,
  actor: { kind: ActorKind; id: string | null },
  input: AuditInput,
  requestId: string | undefined,
): Promise<void> {
  const event: AppendEvent = {
    kind: input.kind,
    outcome: input.outcome ?? "success",
    actorKind: actor.kind,
    actorId: actor.id,
    agentId: input.agentId ?? null,
    conversationId: input.conversationId ?? null,
    target: input.target ?? "",
    intent: input.intent ?? input.kind.split(".").pop() ?? "",
    subjectUserId: input.subjectUserId ?? null,
    details: allowedDetails(input.kind, input.details),
    occurredAt: new Date().toISOString(),
  };
  try {
    await auditLog(env, workspaceId).append([event]);
  } catch (error) {
    // The state change is already committed: park the event rather than lose it.
    console.error(
      JSON.stringify({
        level: "error",
        msg: "audit append failed; event parked",
        request_id: requestId,
        kind: input.kind,
        error: String(error),
      }),
    );
    await parkEvent(env, workspaceId, event, error);
  }
}
