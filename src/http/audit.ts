import type { Context, MiddlewareHandler } from "hono";
import {
  deliverAfterCommit,
  type OutboxEntry,
  outboxEntry,
  outboxInsert,
  type RecordInput,
} from "../../durable-objects/audit-log/record";
import type { ActorKind } from "../../durable-objects/audit-log/types";
import type { Caller } from "../auth/caller";
import { db } from "../platform/db";
import type { AppEnv } from "./context";

export type AuditInput = Omit<RecordInput, "actor"> & {
  /** Defaults to the authenticated caller (or the system when there is none). */
  actor?: RecordInput["actor"];
  /** Defaults to the caller's workspace. */
  workspaceId?: string;
};

const ACTOR_KIND: Record<Caller["auth"], ActorKind> = { pat: "token", session: "user", oauth: "oauth_client" };

/** How the audit log names a caller. */
export const callerActor = (caller: Caller): RecordInput["actor"] => ({
  kind: ACTOR_KIND[caller.auth],
  id: caller.userId,
});

/**
 * The outbox row of a route's event, for the service to write in the same D1 batch as the
 * change it records. The actor and workspace default to the request's caller; the row is
 * moved into the chain after the response (see `deliverAuditAfterResponse`).
 */
export function auditEntry(c: Context<AppEnv>, input: AuditInput): OutboxEntry {
  const caller = c.get("caller") as Caller | undefined;
  const workspaceId = input.workspaceId ?? caller?.workspace.id;
  if (!workspaceId) throw new Error(`audit event ${input.kind} has no workspace`);
  const actor = input.actor ?? (caller ? callerActor(caller) : { kind: "system" as const, id: null });
  deliverAfterResponse(c, workspaceId);
  return outboxEntry(workspaceId, { ...input, actor });
}

/** Marks a workspace whose outbox this request wrote to (for rows a service built itself). */
export function deliverAfterResponse(c: Context<AppEnv>, workspaceId: string): void {
  const pending = c.get("auditPending") ?? new Set<string>();
  pending.add(workspaceId);
  c.set("auditPending", pending);
}

/** `auditEntry` as a statement for a service's Drizzle batch (see `CommitWith`). */
export const auditItem = (c: Context<AppEnv>, input: AuditInput) => outboxInsert(db(c.env), auditEntry(c, input));

/** Records an event that no D1 change accompanies (a refusal, a sign-in failure): its outbox row alone. */
export async function audit(c: Context<AppEnv>, input: AuditInput): Promise<void> {
  await outboxInsert(db(c.env), auditEntry(c, input)).run();
}

/**
 * Delivers the outbox rows a request wrote into their workspaces' chains once the response
 * is on its way: the client does not wait for the audit object, and the rows are durable already.
 */
export const deliverAuditAfterResponse: MiddlewareHandler<AppEnv> = async (c, next) => {
  await next();
  const pending = c.get("auditPending");
  if (!pending) return;
  for (const workspaceId of pending) {
    const delivery = deliverAfterCommit(c.env, workspaceId);
    if (!delivery) continue; // a delivery under way in this isolate takes this request's rows too
    try {
      c.executionCtx.waitUntil(delivery);
    } catch {
      await delivery; // no execution context (a direct app.request): deliver before answering
    }
  }
};

export {
  jsonBoolean,
  type OutboxEntry,
  outboxEntry,
  outboxInsert,
  outboxInsertIf,
  outboxStatement,
  outboxStatementFrom,
  PREVIOUS_STATEMENT_CHANGED,
  record,
} from "../../durable-objects/audit-log/record";
