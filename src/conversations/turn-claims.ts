/**
 * A conversation's turn: claiming it (one turn at a time), storing the user's message,
 * then the agent's reply, and releasing the claim.
 */
import { type AgentRecord, getAgentRecord, resolveAgent } from "../agents/service";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { ApiError, badRequest, conflict } from "../platform/problem";
import type { Conversation, Message } from "./schemas";

/** A turn that has not ended this long after it started is taken to have died with its Worker. */
const STALE_TURN_MS = 180_000;

/** The agent that answers a message: the one named, else the conversation's own. */
export async function turnAgent(
  env: Env,
  workspaceId: string,
  conversation: Conversation,
  handle?: string,
): Promise<AgentRecord> {
  if (handle) return resolveAgent(env, workspaceId, handle);
  const agent = await getAgentRecord(env, workspaceId, conversation.agent_id);
  if (agent.status !== "enabled") throw badRequest("agent_disabled", `The agent @${agent.slug} is disabled`);
  return agent;
}

/**
 * Claims the conversation for one turn (a conditional UPDATE, so two posts at once cannot
 * both win) and stores the user's message, making its author a participant.
 */
export async function startTurn(
  env: Env,
  workspaceId: string,
  conversationId: string,
  userId: string,
  content: string,
): Promise<{ turnId: string; userMessage: Message; history: { role: "user" | "assistant"; content: string }[] }> {
  // Ids are time-ordered and messages are read in id order: the question's id comes first.
  const messageId = newId();
  const turnId = newId();
  const now = nowIso();
  const claimed = await env.DB.prepare(
    `UPDATE conversations SET turn_id = ?1, turn_started_at = ?2
     WHERE id = ?3 AND workspace_id = ?4 AND (turn_id IS NULL OR turn_started_at < ?5) RETURNING id`,
  )
    .bind(turnId, now, conversationId, workspaceId, new Date(Date.now() - STALE_TURN_MS).toISOString())
    .first();
  if (!claimed)
    throw conflict("turn_in_progress", "The agent is still answering in this conversation; try again when it is done");
  try {
    const { results: earlier } = await env.DB.prepare(
      "SELECT role, content FROM messages WHERE conversation_id = ?1 ORDER BY id",
    )
      .bind(conversationId)
      .all<{ role: "user" | "assistant"; content: string }>();
    await env.DB.batch([
      env.DB.prepare(
        `INSERT INTO messages (id, conversation_id, workspace_id, role, author_user_id, content, created_at)
         VALUES (?1, ?2, ?3, 'user', ?4, ?5, ?6)`,
      ).bind(messageId, conversationId, workspaceId, userId, content, now),
      env.DB.prepare(
        `INSERT INTO conversation_participants (conversation_id, user_id, workspace_id, last_message_at, added_at)
         VALUES (?1, ?2, ?3, ?4, ?4) ON CONFLICT DO NOTHING`,
      ).bind(conversationId, userId, workspaceId, now),
      ...touchStatements(env, conversationId, now),
    ]);
    const userMessage: Message = {
      id: messageId,
      conversation_id: conversationId,
      role: "user",
      author_user_id: userId,
      agent_id: null,
      content,
      tool_calls: [],
      artifact_ids: [],
      usage: { input_tokens: 0, output_tokens: 0, credits: 0 },
      created_at: now,
    };
    return { turnId, userMessage, history: earlier };
  } catch (e) {
    await releaseTurn(env, conversationId, turnId);
    throw e;
  }
}

function touchStatements(env: Env, conversationId: string, at: string) {
  return [
    env.DB.prepare("UPDATE conversations SET last_message_at = ?2 WHERE id = ?1").bind(conversationId, at),
    env.DB.prepare("UPDATE conversation_participants SET last_message_at = ?2 WHERE conversation_id = ?1").bind(
      conversationId,
      at,
    ),
  ];
}

export async function releaseTurn(env: Env, conversationId: string, turnId: string): Promise<void> {
  await env.DB.prepare("UPDATE conversations SET turn_id = NULL, turn_started_at = NULL WHERE id = ?1 AND turn_id = ?2")
    .bind(conversationId, turnId)
    .run();
}

/** Stores the agent's reply and ends the turn, in one batch. */
export async function finishTurn(
  env: Env,
  workspaceId: string,
  conversationId: string,
  turnId: string,
  reply: Omit<Message, "id" | "conversation_id" | "role" | "author_user_id" | "created_at">,
  alsoCommit: D1PreparedStatement[] = [],
): Promise<Message> {
  const now = nowIso();
  await env.DB.batch([
    env.DB.prepare(
      `INSERT INTO messages (id, conversation_id, workspace_id, role, agent_id, content, tool_calls, artifact_ids,
         input_tokens, output_tokens, credits, created_at)
       VALUES (?1, ?2, ?3, 'assistant', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)`,
    ).bind(
      turnId,
      conversationId,
      workspaceId,
      reply.agent_id,
      reply.content,
      JSON.stringify(reply.tool_calls),
      JSON.stringify(reply.artifact_ids),
      reply.usage.input_tokens,
      reply.usage.output_tokens,
      reply.usage.credits,
      now,
    ),
    ...touchStatements(env, conversationId, now),
    env.DB.prepare(
      "UPDATE conversations SET turn_id = NULL, turn_started_at = NULL WHERE id = ?1 AND turn_id = ?2",
    ).bind(conversationId, turnId),
    ...alsoCommit,
  ]);
  return {
    ...reply,
    id: turnId,
    conversation_id: conversationId,
    role: "assistant",
    author_user_id: null,
    created_at: now,
  };
}

export const modelNotConfigured = () =>
  new ApiError(503, "model_not_configured", "No language model is configured for this service");
