import { callerEvent } from "../http/audit";
import { routesOf } from "../http/endpoint";
import { jsonBody } from "../http/route";
import { badRequest, conflict, notFound } from "../platform/problem";
import { decideAsCaller, refusedDecision } from "./approval-routes";
import { approvalResponsesOf, openChat, questionOf } from "./chat";
import { conversationCreated } from "./events";
import { conversationRoom } from "./room/client";
import { uiStreamResponse } from "./room/sse";
import { TAGS, uiStream } from "./route-parts";
import { ChatIdParamSchema, ChatRequestSchema, IdempotencyHeaderSchema } from "./schemas";
import { chatConversation } from "./service";
import { postChatMessage, postMessage, turnContext, turnReady } from "./turns";

/** The AI SDK's chat transport, unmodified: `useChat` with `api` pointing here, and `resume: true`. */
const route = routesOf(TAGS);
export const chatRouter = route.router;

route({ scope: "conversations:write" }, "POST /v1/api/chat", "Chat (AI SDK transport)", {
  description:
    "What the AI SDK's `DefaultChatTransport` (`useChat`) posts: `{ id, messages, trigger, messageId? }`. " +
    "`id` names one of the caller's conversations, or is any id the client chose (1-128 characters), which " +
    "opens a conversation (with `agent_slug`, else the default agent) found again by that id. Only the last " +
    "user message is new input: the history is the conversation's own. The user message keeps the client's " +
    "id, and that id makes the request idempotent (as an `Idempotency-Key` does): a repeat answers the same " +
    "turn. `trigger: regenerate-message` answers the last question again in place of the last reply. The " +
    "answer is the turn's UI message stream, as `POST …/messages` streams it; its `start` chunk carries the " +
    "assistant message's id. When the messages end with the assistant's and its tool parts are " +
    '`state: "approval-responded"` (what `addToolApprovalResponse` sets), the request decides those approvals ' +
    "and answers the resumed turn's new segment (its `start` carries the same message id).",
  request: { headers: IdempotencyHeaderSchema, body: jsonBody(ChatRequestSchema) },
  responses: {
    200: uiStream("The turn's stream"),
    400: "Invalid body, no user message with text, nothing to regenerate (`nothing_to_regenerate`), or a malformed approval response (`invalid_approval`)",
    402: "Out of credits (`insufficient_credits`)",
    404: "No such agent, or (approval responses) no such chat or approval",
    409: "Another turn is running (`turn_in_progress`), an approval waits (`approval_pending`), or it was decided already (`approval_decided`)",
    410: "The approval expired (`approval_expired`)",
    422: "The message id or `Idempotency-Key` was used for other content (`idempotency_key_reused`)",
    503: "No language model is configured (`model_not_configured`)",
  },
}).handle(async (c) => {
  const body = c.req.valid("json");
  const { caller } = c.var;
  const responses = approvalResponsesOf(body.messages);
  if (responses) {
    const conversation = await chatConversation(c.env, caller.workspace.id, caller.userId, body.id);
    if (!conversation) throw notFound("No such chat");
    const { answers, stream } = await decideAsCaller(c, conversation.id, responses, true);
    if (stream) return uiStreamResponse(stream) as never;
    for (const answer of answers) if (answer.kind !== "accepted") throw refusedDecision(answer);
    throw conflict("approval_pending", "Other approvals of this turn still wait for a decision");
  }
  const question = questionOf(body.messages);
  const regenerate = body.trigger === "regenerate-message";
  const key =
    c.req.valid("header")["idempotency-key"] ??
    (regenerate ? (body.messageId ? `regenerate:${body.messageId}` : null) : `message:${question.id}`);
  const message = { content: question.text };
  const opts = { stream: true, idempotencyKey: key, userMessageId: regenerate ? undefined : question.id, regenerate };
  const newChat = async () => {
    if (regenerate) throw badRequest("nothing_to_regenerate", "This chat has no question to answer again");
    // A new chat opens its conversation only when a turn can run in it.
    await turnReady(c.env, caller.workspace.id);
    const conversation = await openChat(c.env, caller.workspace.id, caller.userId, body, (created) =>
      callerEvent(c, conversationCreated(created)),
    );
    return postMessage(turnContext(c), conversation.id, message, opts);
  };
  // A known chat's conversation is read in the turn's own round trip.
  const turn = (await postChatMessage(turnContext(c), body.id, message, opts)) ?? (await newChat());
  if (turn.kind !== "stream") throw new Error("a streamed turn answered without its stream");
  return uiStreamResponse(turn.stream) as never;
});

route({ scope: "conversations:read" }, "GET /v1/api/chat/{id}/stream", "Resume a chat's stream (AI SDK transport)", {
  description:
    "What `useChat({ resume: true })` calls when a page loads: the running turn's UI message stream from " +
    "its start; 204 when no turn runs or the chat id names no conversation of the caller yet.",
  params: ChatIdParamSchema,
  responses: { 200: uiStream("The stream"), 204: "No turn running", 400: "A chat id over 128 characters" },
}).handle(async (c) => {
  const { id } = c.req.valid("param");
  const { caller } = c.var;
  const conversation = await chatConversation(c.env, caller.workspace.id, caller.userId, id);
  if (!conversation) return c.body(null, 204);
  const stream = await conversationRoom(c.env, conversation.id).stream(conversation.id, caller.workspace.id, null);
  return stream ? (uiStreamResponse(stream) as never) : c.body(null, 204);
});
