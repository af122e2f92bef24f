import { auditLog } from "../../durable-objects/audit-log/client";
import { deliverNow } from "../audit/delivery";
import { routesOf } from "../http/endpoint";
import { jsonResponse } from "../http/route";
import { problemResponse } from "../platform/problem";
import { AuditListSchema, AuditQuerySchema, VerifyQuerySchema, VerifyResultSchema } from "./schemas";

const route = routesOf(["Audit"]);

route("admin", "GET /v1/admin/audit", "List audit events, newest first", {
  request: { query: AuditQuerySchema },
  responses: {
    200: jsonResponse(AuditListSchema, "One page of events and the unpaginated total"),
    400: problemResponse("Malformed query"),
  },
}).handle(async (c) => {
  const q = c.req.valid("query");
  const workspaceId = c.var.caller.workspace.id;
  await deliverNow(c.env, workspaceId); // read-your-writes: events committed before this request are listed
  const { events, total } = await auditLog(c.env, workspaceId).list(
    {
      days: q.days,
      kind: q.kind,
      outcome: q.outcome,
      actorKind: q.actor_kind,
      agentId: q.agent_id,
      conversationId: q.conversation_id,
      q: q.q,
    },
    { page: q.page, pageSize: q.page_size },
  );
  return c.json(
    {
      events: events.map((e) => ({ ...e, details: JSON.parse(e.details) as Record<string, unknown> })),
      total,
      page: q.page,
      page_size: q.page_size,
    },
    200,
  );
});

route("admin", "GET /v1/admin/audit/verify", "Verify the hash chain of the most recent entries", {
  description: "Walks the last `limit` entries in ascending order, anchored on the entry just before the first.",
  request: { query: VerifyQuerySchema },
  responses: {
    200: jsonResponse(VerifyResultSchema, "The verification result"),
    400: problemResponse("Malformed query"),
  },
}).handle(async (c) => {
  const workspaceId = c.var.caller.workspace.id;
  await deliverNow(c.env, workspaceId);
  return c.json(await auditLog(c.env, workspaceId).verify(c.req.valid("query").limit), 200);
});

export const auditRouter = route.router;
