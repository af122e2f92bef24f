import type { Context } from "hono";
import { type AgentRecord, capabilitiesOf, installedQueries, turnAgentQuery, usableAgent } from "../agents/service";
import type { AuditActor } from "../audit/events";
import { requireCredits } from "../billing/ledger";
import { callerActor } from "../http/audit";
import type { AppEnv } from "../http/context";
import { modelError } from "../llm/errors";
import { agentLanguageModel } from "../llm/model";
import { db } from "../platform/db";
import { baseUrl } from "../platform/env";
import { ApiError, badRequest, conflict } from "../platform/problem";
import { conversationRoom } from "./room/client";
import type { Message } from "./schemas";
import { noSuchConversation, participantConversationQuery, toConversation } from "./service";

export type TurnContext = {
  env: Env;
  workspace: { id: string; name: string };
  userId: string;
  actor: AuditActor;
  origin: string;
};

/** A route's caller, as the turn records and bills it. */
export const turnContext = (c: Context<AppEnv>): TurnContext => ({
  env: c.env,
  workspace: { id: c.var.caller.workspace.id, name: c.var.caller.workspace.name },
  userId: c.var.caller.userId,
  actor: callerActor(c.var.caller),
  origin: baseUrl(c.env, c.req.url),
});

/** Fast-mode conversations run on the fast lane whatever the agent's own profile. */
const profileFor = (mode: "standard" | "fast", agent: AgentRecord) => (mode === "fast" ? "fast" : agent.runtimeProfile);

/**
 * Everything a turn needs from D1, in one round trip: the conversation (the caller takes part
 * in it), the agent that answers (the one named, else the conversation's own) and what it may
 * use. The credit check runs beside it.
 */
async function preflight(env: Env, workspaceId: string, userId: string, conversationId: string, handle?: string) {
  const [[conversation], [agent], skills, servers] = await db(env).batch([
    participantConversationQuery(env, workspaceId, userId, conversationId),
    turnAgentQuery(env, workspaceId, handle, conversationId),
    ...installedQueries(env, workspaceId),
  ]);
  if (!conversation) throw noSuchConversation();
  const usable = usableAgent(agent, handle);
  return {
    conversation: toConversation(conversation),
    agent: usable,
    capabilities: capabilitiesOf(usable, skills, servers),
  };
}

export const modelNotConfigured = () =>
  new ApiError(503, "model_not_configured", "No language model is configured for this service");

export type PostedTurn =
  | { kind: "stream"; turnId: string; stream: ReadableStream<Uint8Array> }
  | { kind: "reply"; userMessage: Message; reply: Message };

/**
 * Posts a member's message; the conversation's room runs the agent's turn. 503 without a
 * model and 402 without credits (before anything is stored), 409 while another turn runs,
 * 422 for an `Idempotency-Key` reused with other content. The turn goes on in the room when
 * the client leaves: its reply is stored, billed and audited once, at its end.
 */
export async function postMessage(
  ctx: TurnContext,
  conversationId: string,
  input: { content: string; agent_slug?: string },
  opts: {
    stream: boolean;
    idempotencyKey?: string | null;
    /** The client's id for the user message (AI SDK ids), kept as given. */
    userMessageId?: string;
    /** Answer the last question again, replacing the last reply. */
    regenerate?: boolean;
    /** The earlier messages as the client sends them (OpenAI-compatible clients); else the room's. */
    history?: { role: "user" | "assistant"; content: string }[];
  },
): Promise<PostedTurn> {
  const { env, workspace } = ctx;
  const credits = requireCredits(env, workspace.id);
  credits.catch(() => undefined); // awaited below, once the conversation is known to be the caller's
  const { conversation, agent, capabilities } = await preflight(
    env,
    workspace.id,
    ctx.userId,
    conversationId,
    input.agent_slug,
  );
  const profile = profileFor(conversation.mode, agent);
  const model = agentLanguageModel(env, {
    runtime_profile: profile,
    model: profile === agent.runtimeProfile ? agent.model : null,
  });
  if (!model) throw modelNotConfigured();
  // Out of credits, a repeat of a turn already paid for still gets its answer.
  const noCredits = await credits.then(
    () => null,
    (e: unknown) => {
      if (e instanceof ApiError && e.status === 402 && opts.idempotencyKey) return e;
      throw e;
    },
  );
  const answer = await conversationRoom(env, conversationId).startTurn({
    conversationId,
    workspace,
    userId: ctx.userId,
    actor: ctx.actor,
    origin: ctx.origin,
    agent,
    capabilities,
    profile,
    content: input.content,
    idempotencyKey: opts.idempotencyKey ?? null,
    userMessageId: opts.userMessageId,
    regenerate: opts.regenerate,
    history: opts.history,
    hasCredits: !noCredits,
    stream: opts.stream,
  });
  switch (answer.kind) {
    case "busy":
      throw conflict(
        "turn_in_progress",
        "The agent is still answering in this conversation; try again when it is done",
      );
    case "key_reused":
      throw new ApiError(
        422,
        "idempotency_key_reused",
        "This Idempotency-Key was used for another message in this conversation within 24 hours",
      );
    case "no_credits":
      throw noCredits!;
    case "nothing_to_regenerate":
      throw badRequest("nothing_to_regenerate", "The conversation has no question to answer again");
    case "failed":
      throw modelError(answer.failure);
    case "error":
      throw new Error("the turn's reply could not be stored");
    default:
      return answer;
  }
}

/** A model is configured and the workspace has credits: checked before opening a conversation for a turn. */
export async function turnReady(env: Env, workspaceId: string): Promise<void> {
  if (!agentLanguageModel(env, { runtime_profile: "standard", model: null })) throw modelNotConfigured();
  await requireCredits(env, workspaceId);
}

/** Quick ask: an empty fast conversation with the default agent, when a fast model and credits are there. */
export async function quickAskReady(env: Env, workspaceId: string): Promise<void> {
  if (!agentLanguageModel(env, { runtime_profile: "fast", model: null }))
    throw new ApiError(503, "quick_chat_not_configured", "Quick chat needs a language model; none is configured");
  await requireCredits(env, workspaceId);
}
