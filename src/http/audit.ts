import type { Context } from "hono";
import { type RecordInput, record } from "../../durable-objects/audit-log/record";
import type { ActorKind } from "../../durable-objects/audit-log/types";
import type { Caller } from "../auth/caller";
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

/** `record` for a route: the actor and workspace default to the request's caller. */
export async function audit(c: Context<AppEnv>, input: AuditInput): Promise<void> {
  const caller = c.get("caller") as Caller | undefined;
  const workspaceId = input.workspaceId ?? caller?.workspace.id;
  if (!workspaceId) throw new Error(`audit event ${input.kind} has no workspace`);
  const actor = input.actor ?? (caller ? callerActor(caller) : { kind: "system" as const, id: null });
  await record(c.env, workspaceId, { ...input, actor });
}
