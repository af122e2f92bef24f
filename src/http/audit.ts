import type { Context } from "hono";
import type { ActorKind } from "../../durable-objects/audit-log/types";
import { type AuditActor, type AuditEventInput, type AuditEventOf, auditAlone } from "../audit/events";
import type { Caller } from "../auth/caller";
import { ApiError } from "../platform/problem";
import type { AppEnv } from "./context";

const ACTOR_KIND: Record<Caller["auth"], ActorKind> = { pat: "token", session: "user", oauth: "oauth_client" };

/** How the audit log names a caller. */
export const callerActor = (caller: Caller): AuditActor => ({ kind: ACTOR_KIND[caller.auth], id: caller.userId });

/**
 * A route's event, by the request's caller in the caller's workspace unless it names others
 * (the system, for a request no one signed). Hand it to the service that makes the change.
 */
export function callerEvent(c: Context<AppEnv>, event: AuditEventOf): AuditEventInput {
  const caller = c.get("caller") as Caller | undefined;
  const workspaceId = event.workspaceId ?? caller?.workspace.id;
  if (!workspaceId) throw new Error(`audit event ${event.kind} has no workspace`);
  const actor = event.actor ?? (caller ? callerActor(caller) : { kind: "system" as const, id: null });
  return { ...event, workspaceId, actor } as AuditEventInput;
}

/** Records the caller's refused attempt on this route; `intent` names the rule that refused it. */
export async function auditDenied(c: Context<AppEnv>, intent: string): Promise<void> {
  await auditAlone(
    c.env,
    callerEvent(c, {
      kind: "access.denied",
      outcome: "denied",
      target: `route:${c.req.method} ${c.req.routePath}`,
      intent,
    }),
  );
}

/**
 * The outcome of `change`, a change the caller may be refused: its 403 is recorded as the
 * denied `event` (nothing changed, so the event stands alone), then answered as it was.
 */
export async function auditingRefusal<T>(c: Context<AppEnv>, event: AuditEventOf, change: Promise<T>): Promise<T> {
  try {
    return await change;
  } catch (error) {
    if (error instanceof ApiError && error.status === 403)
      await auditAlone(c.env, callerEvent(c, { ...event, outcome: "denied" } as AuditEventOf));
    throw error;
  }
}
