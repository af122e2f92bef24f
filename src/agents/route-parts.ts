/** What the agents area's routes share: tags, the id parameter and its errors, the agent event. */
import type { Context } from "hono";
import type { AuditDetails, AuditEventOf, AuditKind } from "../audit/events";
import type { AppEnv } from "../http/context";
import { jsonResponse } from "../http/route";
import { baseUrl } from "../platform/env";
import { problemResponse } from "../platform/problem";
import { AgentIdParamSchema, AgentRowSchema } from "./schemas";

export const TAGS = ["Agents"];
export const params = { params: AgentIdParamSchema };
export const idErrors = {
  400: problemResponse("Malformed agent id or invalid request"),
  404: problemResponse("No such agent in this workspace"),
};
export const agentResponse = (description: string) => jsonResponse(AgentRowSchema, description);
export const origin = (c: Context<AppEnv>) => baseUrl(c.env, c.req.url);
/** An audit event about one agent; the intent defaults to the kind's verb. */
export const agentEvent = <K extends AuditKind>(kind: K, id: string, details: AuditDetails<K>, intent?: string) =>
  ({
    kind,
    target: `agent:${id}`,
    agentId: id,
    intent,
    details,
  }) as AuditEventOf;
