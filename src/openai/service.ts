import { listAgents, resolveAgent } from "../agents/service";
import type { AuditEventInput } from "../audit/events";
import { requireCredits } from "../billing/ledger";
import { pendingCalls } from "../conversations/room/approval-parts";
import type { StoredPart } from "../conversations/room/schema";
import type { Conversation, Message } from "../conversations/schemas";
import { createConversation, listMessages } from "../conversations/service";
import { modelNotConfigured, type PostedTurn, postMessage, type TurnContext } from "../conversations/turns";
import { languageModel } from "../llm/model";
import { ApiError, badRequest } from "../platform/problem";
import type { ChatCompletion, ChatCompletionRequest, ChatMessage, ModelList, Usage } from "./schemas";
import { completionStream } from "./stream";

/** The name OpenAI clients may use for the workspace's default agent; reserved, so no agent holds it. */
export const DEFAULT_MODEL = "default";

/** The workspace's enabled agents as OpenAI models, named by slug (the default agent's among them). */
export async function listModels(env: Env, workspace: { id: string; slug: string }): Promise<ModelList> {
  const agents = await listAgents(env, workspace.id);
  return {
    object: "list",
    data: agents
      .filter((a) => a.status === "enabled")
      .map((a) => ({
        id: a.slug,
        object: "model",
        created: Math.floor(Date.parse(a.created_at) / 1000),
        owned_by: workspace.slug,
      })),
  };
}

const invalid = (code: string, message: string, path: string) => badRequest(code, message, [{ path, message }]);

/** Tool choices that ask for no client-side tool. */
const NO_TOOL_CHOICE = new Set<unknown>([undefined, null, "none", "auto"]);

/** Client-side tools cannot run here (the agent's own tools run server-side): 400 when a request brings some. */
function refuseClientTools(request: ChatCompletionRequest): void {
  const refuse = (param: string) =>
    invalid(
      "unsupported_parameter",
      `\`${param}\` is not supported: client-side tools cannot run here; the agent's own tools run server-side`,
      param,
    );
  if (request.tools?.length) throw refuse("tools");
  if (request.functions?.length) throw refuse("functions");
  if (!NO_TOOL_CHOICE.has(request.tool_choice)) throw refuse("tool_choice");
  if (!NO_TOOL_CHOICE.has(request.function_call)) throw refuse("function_call");
}

/** At most what `POST …/messages` takes as one message. */
const MAX_INPUT = 32_000;

function textOf(message: ChatMessage, i: number): string {
  if (message.content == null) return "";
  if (typeof message.content === "string") return message.content;
  return message.content
    .map((part, j) => {
      if (part.type === "text" && typeof part.text === "string") return part.text;
      throw invalid(
        "unsupported_content",
        part.type === "text"
          ? "A text content part needs its `text` as a string"
          : `Only text content is read, not \`${part.type}\``,
        `messages.${i}.content.${j}`,
      );
    })
    .join("");
}

type HistoryMessage = { role: "user" | "assistant"; content: string };

/**
 * The turn's input (the last message, which must be the user's) and its history (the user and
 * assistant messages before it). System and developer messages are left out: the agent has its
 * own instructions. Tool messages answer client-side tools, which are refused.
 */
export function splitMessages(messages: readonly ChatMessage[]): { input: string; history: HistoryMessage[] } {
  const kept: (HistoryMessage & { index: number })[] = [];
  messages.forEach((m, index) => {
    if (m.role === "system" || m.role === "developer") return;
    if (m.role === "tool" || m.role === "function")
      throw invalid(
        "unsupported_parameter",
        `A \`${m.role}\` message answers a client-side tool, which this API does not take`,
        `messages.${index}.role`,
      );
    kept.push({ role: m.role, content: textOf(m, index), index });
  });
  const last = kept.pop();
  if (last?.role !== "user")
    throw invalid("invalid_messages", "The last message (system messages aside) must be the user's", "messages");
  const input = last.content.trim();
  const at = `messages.${last.index}.content`;
  if (!input) throw invalid("invalid_messages", "The last user message is empty", at);
  if (input.length > MAX_INPUT)
    throw invalid("invalid_messages", `The last user message is longer than ${MAX_INPUT} characters`, at);
  return { input, history: kept.filter((m) => m.content.trim()).map(({ role, content }) => ({ role, content })) };
}

/** The agent a model name means: its slug or alias, or `default`; 404 `model_not_found` otherwise. */
async function agentFor(env: Env, workspaceId: string, model: string) {
  try {
    return await resolveAgent(env, workspaceId, model === DEFAULT_MODEL ? undefined : model);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404)
      throw new ApiError(404, "model_not_found", `The model \`${model}\` does not exist; GET /v1/models lists them`, [
        { path: "model", message: "no agent with this slug or alias" },
      ]);
    throw e;
  }
}

export type Completion = {
  conversationId: string;
  /** The answering agent's slug, the completion's `model`. */
  model: string;
  turn: PostedTurn;
};

/**
 * Runs one turn for an OpenAI chat-completions request: in the conversation named (a
 * participant's), or in a new `standard` conversation with the agent named by `model`
 * (created with its audit event, `created`). Without a model configured (503) or credits
 * (402), nothing is created. Earlier messages of the request are the turn's history; a request
 * that names a conversation and sends only its new message gets the conversation's own history.
 */
export async function runCompletion(
  ctx: TurnContext,
  request: ChatCompletionRequest,
  conversationId: string | undefined,
  created: (conversation: Conversation) => AuditEventInput,
): Promise<Completion> {
  const { env, workspace } = ctx;
  refuseClientTools(request);
  const { input, history } = splitMessages(request.messages);
  if (!languageModel(env)) throw modelNotConfigured();
  const agent = await agentFor(env, workspace.id, request.model);
  let id = conversationId;
  if (!id) {
    await requireCredits(env, workspace.id);
    id = (await createConversation(env, workspace.id, ctx.userId, { agent_slug: agent.slug }, created)).id;
  }
  const turn = await postMessage(
    ctx,
    id,
    { content: input, agent_slug: agent.slug },
    { stream: !!request.stream, history: history.length || !conversationId ? history : undefined },
  );
  return { conversationId: id, model: agent.slug, turn };
}

const usageOf = (reply: Pick<Message, "usage">): Usage => ({
  prompt_tokens: reply.usage.input_tokens,
  completion_tokens: reply.usage.output_tokens,
  total_tokens: reply.usage.input_tokens + reply.usage.output_tokens,
});

const now = () => Math.floor(Date.now() / 1000);

/** A finished turn as a `chat.completion` (one that waits for approvals says which). */
export function completionOf(completion: Completion, reply: Message): ChatCompletion {
  // The parts are the room's stored ones; the API schema only describes them loosely.
  const pending = pendingCalls(reply.parts as StoredPart[]).map((p) => ({ id: p.approvalId, tool_name: p.toolName }));
  return {
    id: `chatcmpl-${reply.id}`,
    object: "chat.completion",
    created: now(),
    model: completion.model,
    choices: [{ index: 0, message: { role: "assistant", content: reply.content }, finish_reason: "stop" }],
    usage: usageOf(reply),
    conversation_id: completion.conversationId,
    ...(pending.length ? { pending_approvals: pending } : {}),
  };
}

/** A streaming turn as `chat.completion.chunk` events; its usage is read from the stored reply at the end. */
export function completionChunks(
  ctx: TurnContext,
  completion: Completion,
  turn: { turnId: string; stream: ReadableStream<Uint8Array> },
  includeUsage: boolean,
): ReadableStream<Uint8Array> {
  const usage = async (): Promise<Usage> => {
    const messages = await listMessages(ctx.env, ctx.workspace.id, ctx.userId, completion.conversationId);
    const reply = messages.find((m) => m.id === turn.turnId);
    return reply ? usageOf(reply) : { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  };
  return completionStream(
    turn.stream,
    {
      id: `chatcmpl-${turn.turnId}`,
      created: now(),
      model: completion.model,
      conversationId: completion.conversationId,
      includeUsage,
    },
    usage,
  );
}
