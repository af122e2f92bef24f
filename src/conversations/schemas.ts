import { z } from "@hono/zod-openapi";
import { cursorPageQuery, nextCursor } from "../http/query";
import { problemSchema } from "../platform/problem";

const Id = z.uuid();

export const ConversationSchema = z
  .object({
    id: Id,
    title: z.string().nullable(),
    mode: z.enum(["standard", "fast"]),
    agent_id: Id,
    agent_slug: z.string(),
    created_by: Id,
    participant_ids: z.array(Id),
    created_at: z.iso.datetime(),
    last_message_at: z.iso.datetime(),
  })
  .openapi("Conversation");
export type Conversation = z.infer<typeof ConversationSchema>;

/** Message ids a client supplies (AI SDK ids are 16 characters) are kept as given; the service's own are UUID v7. */
export const MessageIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,128}$/)
  .openapi({ description: "1-128 characters of `[A-Za-z0-9_-]`: the client's id, or a UUID v7 the service made" });

export const MessageSchema = z
  .object({
    id: MessageIdSchema,
    conversation_id: Id,
    role: z.enum(["user", "assistant"]),
    author_user_id: Id.nullable(),
    agent_id: Id.nullable(),
    content: z.string(),
    parts: z.array(z.looseObject({ type: z.string() })).openapi({
      description:
        "The message as AI SDK `UIMessage` parts (text, reasoning, tool calls with input and output, files), " +
        "so a page can seed `useChat({ messages })` and rebuild tool calls and files after a reload",
    }),
    tool_calls: z.array(z.object({ name: z.string(), ok: z.boolean() })),
    artifact_ids: z.array(Id),
    usage: z.object({ input_tokens: z.number().int(), output_tokens: z.number().int(), credits: z.number().int() }),
    stopped: z.boolean().openapi({ description: "A reply a participant stopped: the part the model said before" }),
    created_at: z.iso.datetime(),
  })
  .openapi("Message");
export type Message = z.infer<typeof MessageSchema>;

export const ConversationWithMessagesSchema = ConversationSchema.extend({ messages: z.array(MessageSchema) }).openapi(
  "ConversationWithMessages",
);

export const ConversationListSchema = z
  .object({
    conversations: z.array(ConversationSchema),
    next_cursor: nextCursor,
  })
  .openapi("ConversationList");

const Handle = z.string().min(1).max(64);

export const CreateConversationRequestSchema = z
  .object({
    agent_slug: Handle.optional().openapi({
      description: "A slug or alias; the workspace's default agent if left out",
    }),
    title: z.string().trim().min(1).max(200).optional(),
    mode: z.enum(["standard", "fast"]).optional().openapi({ description: "Default `standard`" }),
  })
  .strict()
  .openapi("CreateConversationRequest");

export const AddParticipantRequestSchema = z.object({ user_id: Id }).strict().openapi("AddParticipantRequest");

/** At most 32 000 characters: a turn's prompt, not a document (documents are artifacts). */
export const PostMessageRequestSchema = z
  .object({
    content: z.string().trim().min(1).max(32_000),
    agent_slug: Handle.optional().openapi({ description: "Answer with this agent instead of the conversation's" }),
  })
  .strict()
  .openapi("PostMessageRequest");

export const TurnResponseSchema = z
  .object({ user_message: MessageSchema, reply: MessageSchema })
  .openapi("TurnResponse");

export const DeletedSchema = z.object({ id: Id, deleted: z.literal(true) }).openapi("ConversationDeleted");
export const AskResponseSchema = z.object({ conversation_id: Id }).openapi("AskResponse");

export const ConversationIdParamSchema = z.object({
  id: Id.openapi({ param: { name: "id", in: "path" }, description: "The conversation's id" }),
});

export const ListQuerySchema = z.object(cursorPageQuery);

/** The 502 of a turn whose model did not answer: the provider's own message and status. */
export const ModelErrorProblemSchema = problemSchema()
  .extend({
    code: z.literal("model_error"),
    detail: z.string().openapi({ description: "The provider's message, e.g. The model `x` does not exist" }),
    provider_status: z
      .number()
      .int()
      .optional()
      .openapi({ description: "The provider's HTTP status; absent when it never answered" }),
  })
  .openapi("ModelErrorProblem");

/** `<turn_id>:<seq>`, the SSE id of a turn's stream event. */
const Position = z.string().max(200).openapi({ example: "0190e5a3-0000-7000-8000-000000000000:12" });

export const StreamQuerySchema = z.object({
  after: Position.optional().openapi({ description: "Resume after this event (as `Last-Event-ID` does)" }),
});
export const LastEventIdHeaderSchema = z.object({
  "last-event-id": Position.optional().openapi({ description: "The id of the last event the client received" }),
});
export const IdempotencyHeaderSchema = z.object({
  "idempotency-key": z
    .string()
    .min(1)
    .max(255)
    .optional()
    .openapi({ description: "A retry with the same key within 24 h answers the same turn and bills nothing new" }),
});

export const StopResponseSchema = z
  .object({
    turn_id: z.string().nullable(),
    state: z.enum(["idle", "accepted", "streaming", "awaiting_approval", "completed", "stopped", "failed"]),
  })
  .openapi("StopResponse");

/** A message as the AI SDK sends it (`UIMessage`): only the last user message's text is read. */
const ChatMessageSchema = z.looseObject({
  id: MessageIdSchema,
  role: z.enum(["system", "user", "assistant"]),
  parts: z.array(z.looseObject({ type: z.string() })).max(1_000),
});
export type ChatMessage = z.infer<typeof ChatMessageSchema>;

/** Chat ids: the id of one of the caller's conversations, or any id a client chose. */
export const ChatIdSchema = z.string().min(1).max(128);

/** The body the AI SDK's `DefaultChatTransport` (`useChat`) sends. */
export const ChatRequestSchema = z
  .object({
    id: ChatIdSchema.openapi({
      description:
        "The chat: one of the caller's conversations, or any id the client chose (a new conversation, found again by that id)",
    }),
    messages: z.array(ChatMessageSchema).min(1).max(10_000),
    trigger: z.enum(["submit-message", "regenerate-message"]).default("submit-message"),
    messageId: MessageIdSchema.optional().openapi({ description: "With `regenerate-message`: the reply replaced" }),
    agent_slug: Handle.optional().openapi({
      description: "For a new chat: its agent (slug or alias); default agent otherwise",
    }),
    mode: z.enum(["standard", "fast"]).optional().openapi({ description: "For a new chat; default `standard`" }),
  })
  .strict()
  .openapi("ChatRequest");

export const ChatIdParamSchema = z.object({
  id: ChatIdSchema.openapi({ param: { name: "id", in: "path" }, description: "The chat id the client uses" }),
});
