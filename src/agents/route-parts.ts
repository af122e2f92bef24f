/** What the agents area's routes share: tags, the id parameter and its errors, the agent it names, the agent event. */
import type { Context } from "hono";
import type { AuditDetails, AuditEventOf, AuditKind } from "../audit/events";
import type { AppEnv } from "../http/context";
import { jsonResponse } from "../http/route";
import { ApiError, problemResponse } from "../platform/problem";
import { AgentIdParamSchema, type AgentRow, AgentRowSchema } from "./schemas";
import { getAgentRecord, toAgentRow } from "./service";

export const TAGS = ["Agents"];
export const params = { params: AgentIdParamSchema };
export const idErrors = {
  400: problemResponse("Malformed agent id or invalid request"),
  404: problemResponse("No such agent in this workspace"),
};
export const agentResponse = (description: string) => jsonResponse(AgentRowSchema, description);
/** An audit event about one agent; the intent defaults to the kind's verb. */
export const agentEvent = <K extends AuditKind>(kind: K, id: string, details: AuditDetails<K>, intent?: string) =>
  ({
    kind,
    target: `agent:${id}`,
    agentId: id,
    intent,
    details,
  }) as AuditEventOf;

/** The agent the path's `{id}` names, in the caller's workspace (404 otherwise). */
export const pathAgent = async (c: Context<AppEnv>, id: string): Promise<AgentRow> =>
  toAgentRow(await getAgentRecord(c.env, c.var.caller.workspace.id, id));

/** The model a route needs, or the 500 saying this deployment has none configured. */
export function configured<M>(model: M | null, code: string, message: string): M {
  if (!model) throw new ApiError(500, code, message);
  return model;
}
