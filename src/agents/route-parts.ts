import type { AuditDetails, AuditEventOf, AuditKind } from "../audit/events";
import { jsonResponse } from "../http/route";
import { problemResponse } from "../platform/problem";
import { AgentIdParamSchema, AgentRowSchema } from "./schemas";

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
