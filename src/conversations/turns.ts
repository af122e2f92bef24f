import { sql } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import type { Context } from "hono";
import { type AgentRecord, capabilitiesOf, installedColumns, turnAgentOn, usableAgent } from "../agents/service";
import { checkedBalance, creditCheckColumns, creditCheckValues, creditsLeft, requireCredits } from "../billing/ledger";
import { agents, conversations } from "../db/schema";
import { callerActor } from "../http/audit";
import type { AppEnv } from "../http/context";
import { modelError } from "../llm/errors";
import { agentLanguageModel } from "../llm/model";
import { ASKING_AGENT, askingAgentColumns, askingAgentFrom } from "../memory/service";
import { type Db, preparedFor } from "../platform/db";
import { baseUrl } from "../platform/env";
import { literalLimit } from "../platform/limit";
import { ApiError, badRequest, conflict } from "../platform/problem";
import { rememberParticipant } from "./participants";
import { conversationRoom } from "./room/client";
import type { TurnAnswer, TurnCaller, TurnInput } from "./room/types";
import type { Message } from "./schemas";
import {
  conversationAgent,
  conversationColumns,
  noSuchConversation,
  toConversation,
  turnConversationFilter,
} from "./service";

export type TurnContext = TurnCaller & { env: Env };

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

// Built once per isolate: built on every turn, these queries cost more than running them.
const preflights = {
  id: preparedFor((d) => preflightStatement(d, "id")),
  chat: preparedFor((d) => preflightStatement(d, "chat")),
};

/** The agent that answers a turn: the one named in the message, else the conversation's own. */
const turnAgent = alias(agents, "turn_agent");

function preflightStatement(d: Db, by: "id" | "chat") {
  const workspaceId = sql.placeholder("workspaceId");
  const { where, order } = turnConversationFilter(d, by);
  return d
    .select({
      conversation: conversationColumns,
      messageCount: conversations.messageCount,
      agent: turnAgent,
      ...installedColumns(workspaceId),
      ...creditCheckColumns(workspaceId, sql.placeholder("grantAmount"), sql.placeholder("grantReference")),
      // What the memory tools ask before the model: here, so that they ask nothing in the room.
      ...askingAgentColumns(d, turnAgent),
    })
    .from(conversations)
    .innerJoin(agents, conversationAgent)
    .leftJoin(
      turnAgent,
      turnAgentOn(d, turnAgent, {
        workspaceId,
        handle: sql.placeholder("handle"),
        ofConversation: conversations.agentId,
      }),
    )
    .where(where)
    .orderBy(...order)
    .limit(literalLimit(1))
    .prepare();
}

/** Where a message goes: a conversation by its id, or the one an AI SDK chat id names. */
type Target = { conversationId: string } | { chatId: string };

/**
 * Everything a turn needs from D1, in one statement: the conversation (the caller takes part
 * in it), the agent that answers (the one named, else the conversation's own), what it may use,
 * the credits left (and whether this month's free grant is due: `checkedBalance` makes it, in a
 * round trip of its own once a month) and what the memory tools need to know (the agent's
 * handles, the user's freeze). Null when a chat id names no conversation of the caller yet.
 */
async function preflight(env: Env, workspaceId: string, userId: string, target: Target, handle?: string) {
  const statement = "chatId" in target ? preflights.chat(env) : preflights.id(env);
  const row = await statement.get({
    ...creditCheckValues(env, workspaceId),
    userId,
    conversationId: "chatId" in target ? target.chatId : target.conversationId,
    handle: handle ?? "",
  });
  if (!row) {
    if ("chatId" in target) return null;
    throw noSuchConversation();
  }
  rememberParticipant(workspaceId, userId, row.conversation.id);
  const agent = usableAgent(row.agent ?? undefined, handle);
  return {
    conversation: toConversation(row.conversation),
    // No message counted: D1 holds none from before rooms, so the room copies nothing from it.
    nothingToImport: row.messageCount === 0,
    agent,
    capabilities: capabilitiesOf(agent, row),
    credits: row,
    prefetched: { [ASKING_AGENT]: askingAgentFrom(agent.slug, row) },
  };
}

export const modelNotConfigured = () =>
  new ApiError(503, "model_not_configured", "No language model is configured for this service");

export type PostedTurn =
  | { kind: "stream"; turnId: string; stream: ReadableStream<Uint8Array> }
  | { kind: "reply"; userMessage: Message; reply: Message };

type TurnMessage = { content: string; agent_slug?: string };

type TurnOptions = Pick<TurnInput, "stream" | "userMessageId" | "regenerate" | "history"> & {
  idempotencyKey?: string | null;
};

/**
 * Posts a member's message; the conversation's room runs the agent's turn. 503 without a
 * model and 402 without credits (before anything is stored), 409 while another turn runs,
 * 422 for an `Idempotency-Key` reused with other content. The turn goes on in the room when
 * the client leaves: its reply is stored, billed and audited once, at its end.
 */
export async function postMessage(
  ctx: TurnContext,
  conversationId: string,
  input: TurnMessage,
  opts: TurnOptions,
): Promise<PostedTurn> {
  return (await postTo(ctx, { conversationId }, input, opts))!;
}

/**
 * `postMessage` to the conversation an AI SDK chat id names (`chatConversation`'s rule), read in
 * the turn's own round trip; null when the caller has none by that id yet (nothing is stored).
 */
export function postChatMessage(
  ctx: TurnContext,
  chatId: string,
  input: TurnMessage,
  opts: TurnOptions,
): Promise<PostedTurn | null> {
  return postTo(ctx, { chatId }, input, opts);
}

/** The runtime profile the turn runs on; 503 when no model serves it. */
function turnProfile(env: Env, conversation: { mode: "standard" | "fast" }, agent: AgentRecord) {
  const profile = profileFor(conversation.mode, agent);
  const model = agentLanguageModel(env, {
    runtime_profile: profile,
    model: profile === agent.runtimeProfile ? agent.model : null,
  });
  if (!model) throw modelNotConfigured();
  return profile;
}

/**
 * The 402 the workspace is out of credits with, or null. Out of credits, a repeat of a turn
 * already paid for still gets its answer, so with an `Idempotency-Key` the room decides.
 */
async function creditRefusal(env: Env, balance: number, idempotencyKey?: string | null): Promise<ApiError | null> {
  return creditsLeft(env, balance).then(
    () => null,
    (e: unknown) => {
      if (e instanceof ApiError && e.status === 402 && idempotencyKey) return e;
      throw e;
    },
  );
}

/** The room's answer as the route's result, or the problem it stands for. */
function postedOrThrow(answer: TurnAnswer, noCredits: ApiError | null): PostedTurn {
  switch (answer.kind) {
    case "busy":
      throw conflict(
        "turn_in_progress",
        "The agent is still answering in this conversation; try again when it is done",
      );
    case "approval_pending":
      throw conflict(
        "approval_pending",
        "The agent waits for a person's approval in this conversation; decide it first (GET /v1/api/approvals)",
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
    case "gone":
      throw noSuchConversation();
    case "error":
      // The turn's end could not be written (D1 failed): nothing was billed or kept of the reply.
      throw new ApiError(
        503,
        "reply_not_stored",
        "The reply could not be stored, so it was neither kept nor billed; send the message again",
        undefined,
        { "Retry-After": "1" },
      );
    default:
      return answer;
  }
}

async function postTo(ctx: TurnContext, target: Target, input: TurnMessage, opts: TurnOptions) {
  const { env, workspace } = ctx;
  const found = await preflight(env, workspace.id, ctx.userId, target, input.agent_slug);
  if (!found) return null;
  const { conversation, agent, capabilities, nothingToImport } = found;
  const profile = turnProfile(env, conversation, agent);
  const noCredits = await creditRefusal(
    env,
    await checkedBalance(env, workspace.id, found.credits),
    opts.idempotencyKey,
  );
  const answer = await conversationRoom(env, conversation.id).startTurn({
    conversationId: conversation.id,
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
    prefetched: found.prefetched,
    nothingToImport,
  });
  return postedOrThrow(answer, noCredits);
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
