import type { Context } from "hono";
import { callerActor } from "../http/audit";
import type { AppEnv } from "../http/context";
import { routesOf } from "../http/endpoint";
import { jsonBody, jsonResponse } from "../http/route";
import { ApiError, conflict, notFound, problemResponse } from "../platform/problem";
import {
  ApprovalListSchema,
  ApprovalParamsSchema,
  DecideApprovalRequestSchema,
  DecisionResponseSchema,
} from "./approval-schemas";
import type { Decision, DecisionAnswer } from "./room/approval-decisions";
import { pendingFor } from "./room/approval-requests";
import { conversationRoom } from "./room/client";
import { TAGS } from "./route-parts";
import { requireParticipant } from "./service";

/** Tool calls an agent holds back until a person decides: what waits, and the decision. */
const route = routesOf(TAGS);
export const approvalRouter = route.router;

/**
 * The caller's decisions on approvals of one conversation, taken in its room; with `stream`
 * the answer carries the resumed turn's stream once no approval of the turn waits.
 */
export function decideAsCaller(
  c: Context<AppEnv>,
  conversationId: string,
  decisions: Omit<Decision, "decider">[],
  stream: boolean,
) {
  const { caller } = c.var;
  const decider = { userId: caller.userId, actor: callerActor(caller) };
  return conversationRoom(c.env, conversationId).decide(
    conversationId,
    caller.workspace.id,
    decisions.map((d) => ({ ...d, decider })),
    stream,
  );
}

/** A decision the room did not take: 404, 409 `approval_decided` or 410 `approval_expired`. */
export function refusedDecision(answer: Exclude<DecisionAnswer, { kind: "accepted" }>): ApiError {
  switch (answer.kind) {
    case "not_found":
      return notFound("No such approval in this conversation");
    case "decided":
      return conflict("approval_decided", "This approval has been decided already");
    case "expired":
      return new ApiError(410, "approval_expired", "This approval expired; the call counts as denied");
  }
}

route({ scope: "conversations:read" }, "GET /v1/api/approvals", "Approvals waiting for the caller", {
  description:
    "The pending approvals of every conversation the caller takes part in, oldest first: tool calls an agent " +
    "holds back until a person decides (`POST /v1/api/conversations/{id}/approvals/{approval_id}`). An " +
    "approval past its `expires_at` (`APPROVAL_TTL`) is not listed; it counts as denied.",
  responses: { 200: jsonResponse(ApprovalListSchema, "The pending approvals, oldest first") },
}).handle(async (c) => {
  const { caller } = c.var;
  return c.json({ approvals: await pendingFor(c.env, caller.workspace.id, caller.userId) }, 200);
});

route(
  { scope: "conversations:write" },
  "POST /v1/api/conversations/{id}/approvals/{approval_id}",
  "Approve or deny a held-back tool call",
  {
    description:
      "A participant decides: `approved: true` runs the tool, `false` tells the model it was denied (with " +
      "`reason`). The turn resumes in the conversation's room as a new segment of the same turn (same turn " +
      "and message id, sequence numbers go on); read it with `GET /v1/api/conversations/{id}/stream`. A turn " +
      "that asked for several approvals resumes once all are decided.",
    request: { params: ApprovalParamsSchema, body: jsonBody(DecideApprovalRequestSchema) },
    responses: {
      202: jsonResponse(DecisionResponseSchema, "Decided; the turn resumes"),
      400: problemResponse("Malformed id or body"),
      404: problemResponse("No such conversation or approval, or the caller does not take part in it"),
      409: problemResponse("Decided already (`approval_decided`)"),
      410: problemResponse("Expired (`approval_expired`): the call counts as denied"),
    },
  },
).handle(async (c) => {
  const { id, approval_id } = c.req.valid("param");
  const { approved, reason } = c.req.valid("json");
  const { caller } = c.var;
  await requireParticipant(c.env, caller.workspace.id, caller.userId, id);
  const { answers } = await decideAsCaller(
    c,
    id,
    [{ approvalId: approval_id, approved, reason: reason ?? null }],
    false,
  );
  const answer = answers[0]!;
  if (answer.kind !== "accepted") throw refusedDecision(answer);
  return c.json({ approval: answer.approval, turn_id: answer.turnId }, 202);
});
