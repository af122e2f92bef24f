import type { Context } from "hono";
import { conversationCreated } from "../conversations/events";
import type { Conversation } from "../conversations/schemas";
import { turnContext } from "../conversations/turns";
import { callerEvent } from "../http/audit";
import type { AppEnv } from "../http/context";
import { routesOf } from "../http/endpoint";
import { createRouter, jsonBody } from "../http/route";
import { openAiErrorResponse } from "../platform/openai-error";
import {
  ChatCompletionChunkSchema,
  ChatCompletionRequestSchema,
  ChatCompletionSchema,
  ConversationHeaderSchema,
  ModelListSchema,
} from "./schemas";
import { completionChunks, completionOf, listModels, runCompletion } from "./service";

/** OpenAI's own error shape on these routes, so OpenAI clients read their errors unmodified. */
export const openaiRouter = createRouter({ errors: "openai" });
openaiRouter.openAPIRegistry.register("ChatCompletionChunk", ChatCompletionChunkSchema);

const route = routesOf(["OpenAI-compatible"], openaiRouter);
const CONVERSATION_HEADER = "X-Conversation-Id";
const authErrors = {
  401: openAiErrorResponse("`invalid_api_key`: a missing, unknown, expired or revoked token"),
  403: openAiErrorResponse("`insufficient_scope`: the token lacks the route's scope"),
};

route({ scope: "agents:read" }, "GET /v1/models", "The agents, as OpenAI models", {
  description:
    "The workspace's enabled agents in OpenAI's model list: `id` is the agent's slug (the name to pass as " +
    "`model`), `created` its creation time in Unix seconds, `owned_by` the workspace's slug. `default` is " +
    "also accepted as a model name (the default agent) but not listed. For OpenAI clients: `baseURL` " +
    "`{BASE_URL}/v1` and a personal access token or OAuth access token as the API key.",
  responses: { 200: [ModelListSchema, "The models"], ...authErrors },
}).handle(async (c) => c.json(await listModels(c.env, c.var.caller.workspace), 200));

const createdEvent = (c: Context<AppEnv>) => (conversation: Conversation) =>
  callerEvent(c, conversationCreated(conversation));

route({ scope: "conversations:write" }, "POST /v1/chat/completions", "Run a turn, as an OpenAI chat completion", {
  description:
    "OpenAI's chat-completions API over an agent's turn. `model` names the agent (its slug or alias, or " +
    "`default`). The last message is the input and must be the user's; the earlier user and assistant messages " +
    "are the turn's history; `system` and `developer` messages are ignored, since the agent has its own " +
    "instructions; content is text (string or text parts). The turn runs in a new `standard` conversation, or " +
    "in the one named by the `X-Conversation-Id` header (the caller must take part in it; a request that names " +
    "one and sends only its new message gets that conversation's stored history). The answer is a " +
    "`chat.completion` with `usage` (the turn's input and output tokens) and an extra `conversation_id` (also " +
    "in the `X-Conversation-Id` response header). With `stream: true`, `chat.completion.chunk` events (schema " +
    "`ChatCompletionChunk`: the role first, then the text as deltas, then a chunk with `finish_reason`), a " +
    "last chunk with `usage` and empty `choices` when `stream_options.include_usage` is true, then " +
    "`data: [DONE]`; a model failure mid-stream is an `error` event. The agent's tools run server-side; a " +
    "turn that stops to wait for a person's approval of a tool call (the agent's `approval_required`) answers " +
    "what it said so far, with `pending_approvals` (on the completion, or on the stream's chunk with " +
    "`finish_reason`) naming each approval to decide; " +
    "client-side `tools`, `functions`, `tool_choice` and `function_call` are refused. Errors use OpenAI's shape " +
    "`{ error: { message, type, code, param } }`.",
  request: { headers: ConversationHeaderSchema, body: jsonBody(ChatCompletionRequestSchema) },
  responses: {
    200: {
      description: "The completion (or its stream)",
      content: {
        "application/json": { schema: ChatCompletionSchema },
        "text/event-stream": { schema: { type: "string", description: "`data: <ChatCompletionChunk>` events" } },
      },
    },
    400: openAiErrorResponse(
      "A malformed body (`validation_failed`), client-side tools (`unsupported_parameter`), non-text content " +
        "(`unsupported_content`), no user message last (`invalid_messages`), or a disabled agent (`agent_disabled`)",
    ),
    ...authErrors,
    402: openAiErrorResponse("`insufficient_credits`: the workspace has no credits left (with `balance`)"),
    404: openAiErrorResponse(
      "`model_not_found`: no agent with that name; or no such conversation for the caller (`not_found`)",
    ),
    409: openAiErrorResponse(
      "`turn_in_progress`: another turn is running in this conversation; `approval_pending`: its turn waits " +
        "for a person's approval (`POST /v1/api/conversations/{id}/approvals/{approval_id}`)",
    ),
    413: openAiErrorResponse("`payload_too_large`: the request body exceeds 1 MiB"),
    502: openAiErrorResponse(
      "`model_error`: the model provider refused or failed the call; `message` is the provider's, " +
        "`provider_status` its HTTP status; nothing is billed",
    ),
    503: openAiErrorResponse("`model_not_configured`: no language model is configured"),
  },
}).handle(async (c) => {
  const request = c.req.valid("json");
  const ctx = turnContext(c);
  const named = c.req.valid("header")["x-conversation-id"];
  const completion = await runCompletion(ctx, request, named, createdEvent(c));
  const headers = { [CONVERSATION_HEADER]: completion.conversationId };
  const { turn } = completion;
  if (turn.kind === "stream") {
    const stream = completionChunks(ctx, completion, turn, !!request.stream_options?.include_usage);
    return new Response(stream, {
      headers: { ...headers, "Content-Type": "text/event-stream", "Cache-Control": "no-cache" },
    }) as never;
  }
  return c.json(completionOf(completion, turn.reply), 200, headers);
});
