import { SUBPROTOCOL_PREFIX } from "../../durable-objects/protocol";
import { patSubprotocol } from "../browser/auth";
import { routesOf } from "../http/endpoint";
import { ApiError, badRequest } from "../platform/problem";
import { conversationRoom } from "./room/client";
import { LIVE_VIEWER_HEADER, type LiveViewer } from "./room/live";
import { parsePosition, uiStreamResponse } from "./room/sse";
import { idErrors, notParticipant, params, TAGS, uiStream } from "./route-parts";
import { LastEventIdHeaderSchema, StopResponseSchema, StreamQuerySchema } from "./schemas";
import { participantConversation, requireParticipant } from "./service";

/** A running turn from outside its request: resume its stream, watch the conversation live, stop it. */
const route = routesOf(TAGS);
export const turnRouter = route.router;

route({ scope: "conversations:read" }, "GET /v1/api/conversations/{id}/stream", "Resume a turn's stream", {
  description:
    "The running turn's UI message stream from its start; with `Last-Event-ID: <turn_id>:<seq>` (or " +
    "`?after=<turn_id>:<seq>`) only the events after that one, also of a turn that has ended (the events of " +
    "the last 20 turns stay readable for 24 h). Stored events are replayed, then live ones follow: no gap, " +
    "no duplicate. 204 when no turn runs, or after the last event of a turn that has ended.",
  request: { ...params, query: StreamQuerySchema, headers: LastEventIdHeaderSchema },
  responses: {
    200: uiStream("The stream"),
    204: "Nothing to stream",
    400: "Malformed id or position",
    404: notParticipant,
  },
}).handle(async (c) => {
  const { id } = c.req.valid("param");
  const raw = c.req.valid("header")["last-event-id"] ?? c.req.valid("query").after;
  const after = raw === undefined ? null : parsePosition(raw);
  if (raw !== undefined && !after)
    throw badRequest("invalid_position", "Last-Event-ID and `after` take `<turn_id>:<seq>` as the stream sent it");
  await requireParticipant(c.env, c.var.caller.workspace.id, c.var.caller.userId, id);
  const stream = await conversationRoom(c.env, id).stream(id, c.var.caller.workspace.id, after);
  return stream ? (uiStreamResponse(stream) as never) : c.body(null, 204);
});

// Browsers cannot set headers on a WebSocket: the live socket's token may come as the
// `svc-pat.<token>` subprotocol, read as if it were the Authorization header.
turnRouter.use("/v1/api/conversations/:id/live", async (c, next) => {
  const protocol = patSubprotocol(c.req.header("Sec-WebSocket-Protocol"));
  if (protocol && !c.req.header("Authorization")) {
    const headers = new Headers(c.req.raw.headers);
    headers.set("Authorization", `Bearer ${protocol.slice(SUBPROTOCOL_PREFIX.length)}`);
    c.req.raw = new Request(c.req.raw, { headers });
  }
  await next();
});

route({ scope: "conversations:read" }, "GET /v1/api/conversations/{id}/live", "Watch a conversation live (WebSocket)", {
  description:
    "Upgrades to a WebSocket that pushes every new message and the running turn's events to every " +
    "participant watching. The token travels in `Authorization`, or (browsers) as the subprotocol " +
    "`Sec-WebSocket-Protocol: svc-pat.<token>`, which the 101 response echoes. Frames are JSON text: " +
    '`{ "type": "message", "message": <Message> }` for each stored message (the question when it is posted, ' +
    'the reply when its turn ends) and `{ "type": "chunk", "turn_id", "seq", "chunk": <UI message stream chunk> }` ' +
    "for each event of the running turn (a viewer who joins mid-turn first gets the turn's events so far). " +
    "The text frame `ping` is answered `pong`. The socket closes with 1000 when the conversation is deleted or " +
    "its user leaves it, and with 1008 once the credential it was opened with is revoked or expires (checked " +
    "again before a new turn's first frame and every 5 s while frames flow).",
  request: params,
  responses: { 101: "Switching protocols", ...idErrors, 426: "Not a WebSocket upgrade request (`upgrade_required`)" },
}).handle(async (c) => {
  const { id } = c.req.valid("param");
  const { caller } = c.var;
  await participantConversation(c.env, caller.workspace.id, caller.userId, id);
  if (c.req.header("Upgrade")?.toLowerCase() !== "websocket")
    throw new ApiError(426, "upgrade_required", "This endpoint only accepts a WebSocket upgrade", undefined, {
      Upgrade: "websocket",
    });
  const viewer: LiveViewer = {
    conversationId: id,
    workspaceId: caller.workspace.id,
    userId: caller.userId,
    credential: { kind: caller.auth, id: caller.credentialId },
  };
  const upgraded = await conversationRoom(c.env, id).fetch("https://conversation-room/live", {
    headers: { Upgrade: "websocket", [LIVE_VIEWER_HEADER]: JSON.stringify(viewer) },
  });
  const protocol = patSubprotocol(c.req.header("Sec-WebSocket-Protocol"));
  return new Response(null, {
    status: 101,
    webSocket: upgraded.webSocket,
    headers: protocol ? { "Sec-WebSocket-Protocol": protocol } : {},
  }) as never;
});

route({ scope: "conversations:write" }, "POST /v1/api/conversations/{id}/stop", "Stop the running turn", {
  description:
    "Aborts the model call within a second. The partial reply is kept with `stopped: true` and billed for " +
    "the tokens used; the stream ends with `finish` or `abort` and nothing after it. " +
    'With no turn running: `{ turn_id: null, state: "idle" }`.',
  request: params,
  responses: { 200: [StopResponseSchema, "The turn and the state it ended in"], ...idErrors },
}).handle(async (c) => {
  const { id } = c.req.valid("param");
  await participantConversation(c.env, c.var.caller.workspace.id, c.var.caller.userId, id);
  return c.json(await conversationRoom(c.env, id).stop(id, c.var.caller.workspace.id), 200);
});
