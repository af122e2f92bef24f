import type { Context } from "hono";
import { callerEvent } from "../http/audit";
import type { AppEnv } from "../http/context";
import { routesOf } from "../http/endpoint";
import { jsonBody } from "../http/route";
import { approvalRouter } from "./approval-routes";
import { chatRouter } from "./chat-routes";
import { conversationCreated } from "./events";
import { uiStreamResponse } from "./room/sse";
import { idErrors, params, TAGS } from "./route-parts";
import {
  AddParticipantRequestSchema,
  AskResponseSchema,
  type Conversation,
  ConversationListSchema,
  ConversationSchema,
  ConversationWithMessagesSchema,
  CreateConversationRequestSchema,
  DeletedSchema,
  IdempotencyHeaderSchema,
  ListQuerySchema,
  ModelErrorProblemSchema,
  PostMessageRequestSchema,
  TurnResponseSchema,
} from "./schemas";
import {
  addParticipant,
  createConversation,
  deleteConversation,
  listConversations,
  listMessages,
  participantConversation,
} from "./service";
import { turnRouter } from "./turn-routes";
import { postMessage, quickAskReady, turnContext } from "./turns";

const route = routesOf(TAGS);
export const conversationsRouter = route.router;

const target = (id: string) => `conversation:${id}`;
const createdEvent = (c: Context<AppEnv>, conversation: Conversation) =>
  callerEvent(c, conversationCreated(conversation));

conversationsRouter.route("/", chatRouter);
conversationsRouter.route("/", turnRouter);
conversationsRouter.route("/", approvalRouter);

route({ scope: "conversations:write" }, "POST /v1/api/conversations", "Start a conversation", {
  description: "With the agent named by `agent_slug` (a slug or alias), else the workspace's default agent.",
  body: CreateConversationRequestSchema,
  responses: {
    201: [ConversationSchema, "The new conversation"],
    400: "Invalid body, or the agent is disabled (`agent_disabled`)",
    404: "No agent with that slug or alias",
  },
}).handle(async (c) => {
  const conversation = await createConversation(
    c.env,
    c.var.caller.workspace.id,
    c.var.caller.userId,
    c.req.valid("json"),
    (created) => createdEvent(c, created),
  );
  return c.json(conversation, 201);
});

route({ scope: "conversations:read" }, "GET /v1/api/conversations", "The caller's conversations", {
  description: "Most recent activity first; `limit` 1-100 (default 50), then `cursor` from `next_cursor`.",
  query: ListQuerySchema,
  responses: {
    200: [ConversationListSchema, "One page"],
    400: "A `limit` out of range or a cursor this API did not return",
  },
}).handle(async (c) => {
  const { limit, cursor } = c.req.valid("query");
  const page = await listConversations(c.env, c.var.caller.workspace.id, c.var.caller.userId, limit, cursor);
  return c.json(page, 200);
});

route({ scope: "conversations:read" }, "GET /v1/api/conversations/{id}", "A conversation with its messages", {
  description: "Messages oldest first.",
  request: params,
  responses: { 200: [ConversationWithMessagesSchema, "The conversation"], ...idErrors },
}).handle(async (c) => {
  const { id } = c.req.valid("param");
  const conversation = await participantConversation(c.env, c.var.caller.workspace.id, c.var.caller.userId, id);
  const messages = await listMessages(c.env, c.var.caller.workspace.id, c.var.caller.userId, id);
  return c.json({ ...conversation, messages }, 200);
});

route({ scope: "conversations:write" }, "DELETE /v1/api/conversations/{id}", "Delete a conversation", {
  description: "Any participant may. Its messages go; its artifacts stay with their producers, detached.",
  request: params,
  responses: { 200: [DeletedSchema, "Deleted"], ...idErrors },
}).handle(async (c) => {
  const { id } = c.req.valid("param");
  await deleteConversation(
    c.env,
    c.var.caller.workspace.id,
    c.var.caller.userId,
    id,
    callerEvent(c, { kind: "conversation.delete", target: target(id), conversationId: id }),
  );
  return c.json({ id, deleted: true as const }, 200);
});

route({ scope: "conversations:write" }, "POST /v1/api/conversations/{id}/participants", "Add a participant", {
  description: "A participant may add any member of the same workspace. Idempotent.",
  request: { ...params, body: jsonBody(AddParticipantRequestSchema) },
  responses: {
    200: [ConversationSchema, "The conversation with its participants"],
    400: "Malformed id or body",
    404: "No such conversation for the caller, or no such user in the workspace",
  },
}).handle(async (c) => {
  const { id } = c.req.valid("param");
  const { user_id } = c.req.valid("json");
  const { conversation } = await addParticipant(
    c.env,
    c.var.caller.workspace.id,
    c.var.caller.userId,
    id,
    user_id,
    callerEvent(c, {
      kind: "conversation.participant.add",
      target: target(id),
      conversationId: id,
      subjectUserId: user_id,
      details: { user_id },
    }),
  );
  return c.json(conversation, 200);
});

route(
  { scope: "conversations:write" },
  "POST /v1/api/conversations/{id}/messages",
  "Post a message; the agent answers",
  {
    description:
      "Runs one agent turn (at most 12 steps, 120 s) in the conversation's room. JSON by default; with " +
      "`Accept: text/event-stream` the turn streams in the AI SDK UI message stream protocol " +
      "(`x-vercel-ai-ui-message-stream: v1`), each event with an SSE id `<turn_id>:<seq>` to resume from " +
      "(`GET …/stream`). The turn runs to its end when the client leaves; its reply is stored, billed and " +
      "audited once. One turn at a time per conversation. An `Idempotency-Key` header makes a retry safe: " +
      "the same key within 24 h answers the same turn (its stream from the start, or the stored reply) and " +
      "bills nothing new; the same key with other content is 422 `idempotency_key_reused`. " +
      "The agent's `model` goes to the provider as it is; a provider's refusal (an unknown model, a rejected " +
      "request) is a 502 `model_error` whose `detail` is the provider's message and `provider_status` its HTTP " +
      "status, nothing is billed, and a stream carries it as an `error` chunk.",
    request: { ...params, headers: IdempotencyHeaderSchema, body: jsonBody(PostMessageRequestSchema) },
    responses: {
      200: {
        description: "The stored user message and the agent's reply (or the stream)",
        content: {
          "application/json": { schema: TurnResponseSchema },
          "text/event-stream": { schema: { type: "string" } },
        },
      },
      400: "Malformed id or body, or the agent is disabled (`agent_disabled`)",
      402: "Out of credits (`insufficient_credits`, with `balance` and `packs`)",
      404: "No such conversation for the caller, or no such agent",
      409: "Another turn is running in this conversation (`turn_in_progress`)",
      422: "The `Idempotency-Key` was used with other content (`idempotency_key_reused`)",
      502: {
        description: "The model provider refused or failed the call (`model_error`); nothing is billed",
        content: { "application/problem+json": { schema: ModelErrorProblemSchema } },
      },
      503: "No language model is configured (`model_not_configured`), or the reply could not be stored (`reply_not_stored`, nothing billed; send again)",
    },
  },
).handle(async (c) => {
  const { id } = c.req.valid("param");
  const turn = await postMessage(turnContext(c), id, c.req.valid("json"), {
    stream: !!c.req.header("Accept")?.includes("text/event-stream"),
    idempotencyKey: c.req.valid("header")["idempotency-key"],
  });
  if (turn.kind === "stream") return uiStreamResponse(turn.stream) as never;
  return c.json({ user_message: turn.userMessage, reply: turn.reply }, 200);
});

route({ scope: "conversations:write" }, "POST /v1/api/ask", "Quick ask", {
  description: "Creates an empty `fast` conversation with the default agent; its first message runs on the fast lane.",
  responses: {
    200: [AskResponseSchema, "The new conversation's id"],
    402: "Out of credits (`insufficient_credits`)",
    503: "Quick chat is not configured (`quick_chat_not_configured`)",
  },
}).handle(async (c) => {
  await quickAskReady(c.env, c.var.caller.workspace.id);
  const conversation = await createConversation(
    c.env,
    c.var.caller.workspace.id,
    c.var.caller.userId,
    { mode: "fast" },
    (created) => createdEvent(c, created),
  );
  return c.json({ conversation_id: conversation.id }, 200);
});
