import { z } from "@hono/zod-openapi";

/** An agent as OpenAI clients list models: its slug is the model name. */
export const ModelSchema = z
  .object({
    id: z.string().openapi({ description: "The agent's slug, the name to pass as `model`", example: "assistant" }),
    object: z.literal("model"),
    created: z.number().int().openapi({ description: "When the agent was created, in Unix seconds" }),
    owned_by: z.string().openapi({ description: "The workspace's slug" }),
  })
  .openapi("OpenAIModel");
export type Model = z.infer<typeof ModelSchema>;

export const ModelListSchema = z
  .object({ object: z.literal("list"), data: z.array(ModelSchema) })
  .openapi("OpenAIModelList");
export type ModelList = z.infer<typeof ModelListSchema>;

/** One part of a message's content; only text parts are read. */
const ContentPartSchema = z.looseObject({ type: z.string().max(64), text: z.string().optional() });

/**
 * A message as OpenAI clients send it. Fields this service does not read (`name`, `refusal`,
 * an assistant's `tool_calls`, …) are accepted and ignored, as OpenAI-compatible servers do.
 */
const ChatMessageSchema = z.object({
  role: z.enum(["system", "developer", "user", "assistant", "tool", "function"]),
  content: z.union([z.string(), z.array(ContentPartSchema).max(100)]).nullish(),
});
export type ChatMessage = z.infer<typeof ChatMessageSchema>;

export const ChatCompletionRequestSchema = z
  .object({
    model: z.string().min(1).max(256).openapi({
      description: "An agent's slug or alias (see `GET /v1/models`); `default` is the workspace's default agent",
      example: "assistant",
    }),
    messages: z
      .array(ChatMessageSchema)
      .min(1)
      .max(1000)
      .openapi({
        description:
          "The conversation so far; the last message must be the user's: it is the turn's input, the earlier user " +
          "and assistant messages are its history. `system` and `developer` messages are ignored (the agent has its own " +
          "instructions). Text content only.",
      }),
    stream: z.boolean().nullish(),
    stream_options: z
      .object({ include_usage: z.boolean().nullish() })
      .nullish()
      .openapi({ description: "`include_usage: true` adds a last chunk with `usage` and empty `choices`" }),
    n: z.number().int().min(1).max(1).nullish().openapi({ description: "One choice only" }),
    // Client-side tools cannot run here: the agent's own tools run server-side. Refused when given.
    tools: z.array(z.unknown()).max(128).nullish(),
    functions: z.array(z.unknown()).max(128).nullish(),
    tool_choice: z.unknown().optional(),
    function_call: z.unknown().optional(),
  })
  .openapi("ChatCompletionRequest", {
    description:
      "OpenAI's chat-completions request. Sampling parameters (`temperature`, `max_tokens`, …) are accepted and " +
      "ignored: the agent's settings decide. Client-side `tools`, `functions`, `tool_choice` and `function_call` are " +
      "refused with 400 `unsupported_parameter`; the agent's own tools run server-side.",
  });
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequestSchema>;

export const ConversationHeaderSchema = z.object({
  "x-conversation-id": z.uuid().optional().openapi({
    description: "Continue this conversation (one the caller takes part in) instead of starting a new one",
  }),
});

const UsageSchema = z
  .object({
    prompt_tokens: z.number().int(),
    completion_tokens: z.number().int(),
    total_tokens: z.number().int(),
  })
  .openapi("ChatCompletionUsage");
export type Usage = z.infer<typeof UsageSchema>;

const conversationId = z.uuid().openapi({
  description: "The conversation the turn ran in; send it as `X-Conversation-Id` to continue it",
});

/** Present only while the turn waits: what a person must decide before the agent goes on. */
const pendingApprovals = z
  .array(
    z.object({
      id: z
        .string()
        .openapi({ description: "Decide it with `POST /v1/api/conversations/{conversation_id}/approvals/{id}`" }),
      tool_name: z.string(),
    }),
  )
  .optional()
  .openapi({
    description:
      "The tool calls the turn holds for a person's approval (the agent's `approval_required`): the answer " +
      "so far is in the content, and the conversation takes no new message until they are decided",
  });

export const ChatCompletionSchema = z
  .object({
    id: z.string(),
    object: z.literal("chat.completion"),
    created: z.number().int(),
    model: z.string().openapi({ description: "The slug of the agent that answered" }),
    choices: z.array(
      z.object({
        index: z.literal(0),
        message: z.object({ role: z.literal("assistant"), content: z.string() }),
        finish_reason: z.literal("stop"),
      }),
    ),
    usage: UsageSchema,
    conversation_id: conversationId,
    pending_approvals: pendingApprovals,
  })
  .openapi("ChatCompletion");
export type ChatCompletion = z.infer<typeof ChatCompletionSchema>;

/** One `data:` event of a streamed completion. */
export const ChatCompletionChunkSchema = z
  .object({
    id: z.string(),
    object: z.literal("chat.completion.chunk"),
    created: z.number().int(),
    model: z.string(),
    choices: z.array(
      z.object({
        index: z.literal(0),
        delta: z.object({ role: z.literal("assistant").optional(), content: z.string().optional() }),
        finish_reason: z.literal("stop").nullable(),
      }),
    ),
    usage: UsageSchema.nullish(),
    conversation_id: conversationId,
    /** On the chunk with `finish_reason`, when the turn waits for approvals. */
    pending_approvals: pendingApprovals,
  })
  .openapi("ChatCompletionChunk");
export type ChatCompletionChunk = z.infer<typeof ChatCompletionChunkSchema>;
