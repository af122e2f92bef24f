import { type AgentRecord, agentCapabilities, toAgentRow } from "../agents/service";
import { type AuditEventInput, auditInBatch } from "../audit/events";
import { debitStatement, requireCredits } from "../billing/ledger";
import { modelError } from "../llm/errors";
import { agentLanguageModel } from "../llm/model";
import { d1Statement } from "../platform/db";
import { ApiError } from "../platform/problem";
import type { ToolProvider } from "../platform/turn-tools";
import { runTurn, type TurnOutcome } from "../runtime/turn";
import type { Message } from "./schemas";
import { participantConversation } from "./service";
import { finishTurn, modelNotConfigured, releaseTurn, startTurn, turnAgent } from "./turn-claims";

export type TurnContext = {
  env: Env;
  providers: readonly ToolProvider[];
  workspace: { id: string; name: string };
  userId: string;
  actor: AuditEventInput["actor"];
  origin: string;
  /** Keeps the turn's ending alive after the response (a stream the client dropped). */
  waitUntil: (p: Promise<unknown>) => void;
};

/** Fast-mode conversations run on the fast lane whatever the agent's own profile. */
const profileFor = (mode: "standard" | "fast", agent: AgentRecord) => (mode === "fast" ? "fast" : agent.runtimeProfile);

/**
 * Posts a member's message and runs the agent's turn: 503 without a model, 402 without
 * credits (before anything is stored), 409 while another turn runs. The reply is stored,
 * billed and audited when the turn ends, whether or not anyone still reads its stream.
 */
export async function postMessage(
  ctx: TurnContext,
  conversationId: string,
  input: { content: string; agent_slug?: string },
) {
  const { env, workspace } = ctx;
  const conversation = await participantConversation(env, workspace.id, ctx.userId, conversationId);
  const agent = await turnAgent(env, workspace.id, conversation, input.agent_slug);
  const profile = profileFor(conversation.mode, agent);
  const model = agentLanguageModel(env, {
    runtime_profile: profile,
    model: profile === agent.runtimeProfile ? agent.model : null,
  });
  if (!model) throw modelNotConfigured();
  await requireCredits(env, workspace.id);
  const { turnId, userMessage, history } = await startTurn(
    env,
    workspace.id,
    conversationId,
    ctx.userId,
    input.content,
  );

  let turn: Awaited<ReturnType<typeof runTurn>>;
  try {
    const capabilities = await agentCapabilities(env, agent);
    turn = await runTurn({
      env,
      model,
      profile,
      providers: ctx.providers,
      workspace,
      userId: ctx.userId,
      agent: { ...toAgentRow(agent), ...capabilities },
      conversationId,
      turnId,
      origin: ctx.origin,
      history,
      prompt: input.content,
    });
  } catch (e) {
    await releaseTurn(env, conversationId, turnId);
    throw e;
  }
  const reply = turn.done.then((outcome) => settle(ctx, conversationId, turnId, agent, profile, outcome));
  ctx.waitUntil(reply.catch(() => undefined));
  return { userMessage, stream: turn.result, turnId, reply };
}

/** Stores, bills and audits a finished turn; a turn whose model never answered stores no reply. */
async function settle(
  ctx: TurnContext,
  conversationId: string,
  turnId: string,
  agent: AgentRecord,
  profile: string,
  outcome: TurnOutcome,
): Promise<Message> {
  const { env, workspace } = ctx;
  if (outcome.finish === "failed") {
    await releaseTurn(env, conversationId, turnId);
    throw modelError(outcome.failure);
  }
  const event: AuditEventInput = {
    workspaceId: workspace.id,
    kind: "conversation.turn",
    actor: ctx.actor,
    target: `conversation:${conversationId}`,
    agentId: agent.id,
    conversationId,
    details: {
      message_id: turnId,
      runtime_profile: profile,
      model: agent.model,
      steps: outcome.steps,
      tools: outcome.toolCalls.map((t) => t.name),
      finish: outcome.finish,
      usage: { input: outcome.usage.input_tokens, output: outcome.usage.output_tokens },
      credits: outcome.usage.credits,
    },
  };
  // The reply, what it cost and its event commit together; if they cannot, none is kept and
  // the conversation is free for the next message.
  const message = await finishTurn(
    env,
    workspace.id,
    conversationId,
    turnId,
    {
      agent_id: agent.id,
      content: outcome.text,
      tool_calls: outcome.toolCalls,
      artifact_ids: outcome.artifactIds,
      usage: outcome.usage,
    },
    [debitStatement(env, workspace.id, outcome.usage.credits, turnId), d1Statement(env, auditInBatch(env, event))],
  ).catch(async (e) => {
    await releaseTurn(env, conversationId, turnId);
    throw e;
  });
  return message;
}

/** Quick ask: an empty fast conversation with the default agent, when a fast model and credits are there. */
export async function quickAskReady(env: Env, workspaceId: string): Promise<void> {
  if (!agentLanguageModel(env, { runtime_profile: "fast", model: null }))
    throw new ApiError(503, "quick_chat_not_configured", "Quick chat needs a language model; none is configured");
  await requireCredits(env, workspaceId);
}
