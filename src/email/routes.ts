import type { AuditDetails, AuditEventOf, AuditKind } from "../audit/events";
import { callerActor, callerEvent } from "../http/audit";
import { byIdErrors, routesOf } from "../http/endpoint";
import { jsonBody, jsonResponse } from "../http/route";
import { problemResponse } from "../platform/problem";
import { createEndpoint, deleteEndpoint, listEndpoints, updateEndpoint } from "./endpoints";
import { listReplies, reviewReply } from "./replies";
import {
  CreateEndpointSchema,
  EndpointIdParamSchema,
  EndpointListSchema,
  EndpointSchema,
  RepliesQuerySchema,
  ReplyIdParamSchema,
  ReplyListSchema,
  ReplyRowSchema,
  ReviewRequestSchema,
  UpdateEndpointSchema,
} from "./schemas";

const route = routesOf(["Email"]);
const endpointEvent = <K extends AuditKind>(kind: K, id: string, details: AuditDetails<K>) =>
  ({ kind, target: `email_endpoint:${id}`, details }) as AuditEventOf;
const badEndpoint = problemResponse(
  "Invalid body: a reserved localpart (`reserved_localpart`), an agent (`invalid_agent`) or review owner (`invalid_review_owner`) not of this workspace, or a change the system mailbox refuses (`system_endpoint`)",
);
const localpartTaken = problemResponse("The workspace already has this localpart (`localpart_taken`)");

route("admin", "GET /v1/api/email/endpoints", "The workspace's mailboxes", {
  description:
    "The system mailbox `team` and the custom ones, each with counters over its mail. A mailbox's address is `<localpart>-<tenant_email_slug>@<domain>`.",
  responses: { 200: jsonResponse(EndpointListSchema, "The mailboxes") },
}).handle(async (c) => c.json(await listEndpoints(c.env, c.var.caller.workspace.id), 200));

route("admin", "POST /v1/api/email/endpoints", "Create a custom mailbox", {
  description:
    "Defaults: plane `agent`, the default agent, replies reviewed (`review`), anyone may write. A localpart the workspace already has is a 409 (`localpart_taken`).",
  request: { body: jsonBody(CreateEndpointSchema) },
  responses: { 201: jsonResponse(EndpointSchema, "The new mailbox"), 400: badEndpoint, 409: localpartTaken },
}).handle(async (c) => {
  const body = c.req.valid("json");
  const endpoint = await createEndpoint(c.env, c.var.caller.workspace.id, body, (id) =>
    callerEvent(c, endpointEvent("email.endpoint.create", id, { localpart: body.localpart })),
  );
  return c.json(endpoint, 201);
});

route("admin", "PATCH /v1/api/email/endpoints/{id}", "Edit a mailbox", {
  description: "Fields sent are set (null clears an optional one). The system mailbox keeps its localpart.",
  request: { params: EndpointIdParamSchema, body: jsonBody(UpdateEndpointSchema) },
  responses: {
    200: jsonResponse(EndpointSchema, "The mailbox"),
    ...byIdErrors("mailbox"),
    400: badEndpoint,
    409: localpartTaken,
  },
}).handle(async (c) => {
  const { id } = c.req.valid("param");
  const endpoint = await updateEndpoint(c.env, c.var.caller.workspace.id, id, c.req.valid("json"), (fields) =>
    callerEvent(c, endpointEvent("email.endpoint.update", id, { fields })),
  );
  return c.json(endpoint, 200);
});

route("admin", "DELETE /v1/api/email/endpoints/{id}", "Delete a custom mailbox", {
  description:
    "Its mail stays (the workspace's correspondence). The system mailbox cannot be deleted (400 `system_endpoint`).",
  request: { params: EndpointIdParamSchema },
  responses: {
    204: { description: "Deleted" },
    ...byIdErrors("mailbox", "Malformed id, or the system mailbox (`system_endpoint`)"),
  },
}).handle(async (c) => {
  const { id } = c.req.valid("param");
  const event = callerEvent(c, endpointEvent("email.endpoint.delete", id, {}));
  await deleteEndpoint(c.env, c.var.caller.workspace.id, id, event);
  return c.body(null, 204);
});

route({ scope: "email:read" }, "GET /v1/api/email/replies", "Drafted replies the caller reviews", {
  description:
    "Only replies whose review owner is the caller: `reviewed=false` (default) those awaiting review, `reviewed=true` those approved, sent, rejected or whose send failed. Newest first; `limit` 1-100 (default 50), then `cursor` from `next_cursor` until it is null.",
  request: { query: RepliesQuerySchema },
  responses: {
    200: jsonResponse(ReplyListSchema, "One page of the replies"),
    400: problemResponse(
      "`reviewed` is neither true nor false, a `limit` out of range, or a cursor this API did not return",
    ),
  },
}).handle(async (c) =>
  c.json(await listReplies(c.env, c.var.caller.workspace.id, c.var.caller.userId, c.req.valid("query")), 200),
);

route("authenticated", "POST /v1/api/email/replies/{email_message_id}/review", "Approve or reject a drafted reply", {
  description:
    "Only its review owner may. `approve` sends it (with `body`, the edited text) as a threaded reply from the mailbox; a send that fails leaves `send_failed` with the error, and approving again retries. A reply already reviewed is a 409.",
  request: { params: ReplyIdParamSchema, body: jsonBody(ReviewRequestSchema) },
  responses: {
    200: jsonResponse(ReplyRowSchema, "The reply after the review"),
    400: problemResponse("Malformed id or body"),
    404: problemResponse("No such reply for the caller to review"),
    409: problemResponse("Already reviewed (`already_reviewed`)"),
  },
}).handle(async (c) => {
  const caller = c.var.caller;
  const row = await reviewReply(
    c.env,
    { workspaceId: caller.workspace.id, userId: caller.userId, actor: callerActor(caller) },
    c.req.valid("param").email_message_id,
    c.req.valid("json"),
  );
  return c.json(row, 200);
});

export const emailRouter = route.router;
