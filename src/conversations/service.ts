import { sql } from "drizzle-orm";
import { resolveAgent } from "../agents/service";
import { detachConversationApps } from "../apps/service";
import { detachConversationArtifacts, visibleArtifactIds } from "../artifacts/service";
import { type AuditEventInput, auditInBatch, jsonBoolean, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { decodeCursor, encodeCursor } from "../platform/cursor";
import { d1Statement, parseJsonArray } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { notFound } from "../platform/problem";
import { conversationRoom } from "./room/client";
import type { Conversation, Message } from "./schemas";

type ConversationRow = {
  id: string;
  title: string | null;
  mode: "standard" | "fast";
  agent_id: string;
  agent_slug: string;
  created_by: string;
  created_at: string;
  last_message_at: string;
  participant_ids: string;
};

const CONVERSATION_COLUMNS = `c.id, c.title, c.mode, c.agent_id, a.slug AS agent_slug, c.created_by, c.created_at,
  c.last_message_at, (SELECT json_group_array(p2.user_id) FROM conversation_participants p2
  WHERE p2.conversation_id = c.id) AS participant_ids`;

const toConversation = (r: ConversationRow): Conversation => ({
  id: r.id,
  title: r.title,
  mode: r.mode,
  agent_id: r.agent_id,
  agent_slug: r.agent_slug,
  created_by: r.created_by,
  participant_ids: parseJsonArray(r.participant_ids),
  created_at: r.created_at,
  last_message_at: r.last_message_at,
});

/** The conversation, when `userId` takes part in it; 404 otherwise (another workspace included). */
export async function participantConversation(
  env: Env,
  workspaceId: string,
  userId: string,
  id: string,
): Promise<Conversation> {
  const row = await env.DB.prepare(
    `SELECT ${CONVERSATION_COLUMNS} FROM conversations c JOIN agents a ON a.id = c.agent_id
     WHERE c.id = ?1 AND c.workspace_id = ?2
       AND EXISTS (SELECT 1 FROM conversation_participants p WHERE p.conversation_id = c.id AND p.user_id = ?3)`,
  )
    .bind(id, workspaceId, userId)
    .first<ConversationRow>();
  if (!row) throw notFound("No such conversation");
  return toConversation(row);
}

export async function createConversation(
  env: Env,
  workspaceId: string,
  userId: string,
  input: { agent_slug?: string; title?: string; mode?: "standard" | "fast" },
  event: (conversation: Conversation) => AuditEventInput,
): Promise<Conversation> {
  const agent = await resolveAgent(env, workspaceId, input.agent_slug);
  const id = newId();
  const now = nowIso();
  const conversation: Conversation = {
    id,
    title: input.title ?? null,
    mode: input.mode ?? "standard",
    agent_id: agent.id,
    agent_slug: agent.slug,
    created_by: userId,
    participant_ids: [userId],
    created_at: now,
    last_message_at: now,
  };
  await env.DB.batch([
    env.DB.prepare(
      `INSERT INTO conversations (id, workspace_id, title, mode, agent_id, created_by, created_at, last_message_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)`,
    ).bind(id, workspaceId, input.title ?? null, input.mode ?? "standard", agent.id, userId, now),
    env.DB.prepare(
      `INSERT INTO conversation_participants (conversation_id, user_id, workspace_id, last_message_at, added_at)
       VALUES (?1, ?2, ?3, ?4, ?4)`,
    ).bind(id, userId, workspaceId, now),
    d1Statement(env, auditInBatch(env, event(conversation))),
  ]);
  return conversation;
}

/** The caller's conversations, most recent activity first. */
export async function listConversations(
  env: Env,
  workspaceId: string,
  userId: string,
  limit: number,
  cursor?: string,
): Promise<{ conversations: Conversation[]; next_cursor: string | null }> {
  const after = cursor ? decodeCursor(cursor) : null;
  const { results } = await env.DB.prepare(
    `SELECT ${CONVERSATION_COLUMNS} FROM conversation_participants p
     JOIN conversations c ON c.id = p.conversation_id JOIN agents a ON a.id = c.agent_id
     WHERE p.user_id = ?1 AND p.workspace_id = ?2
       AND (?3 IS NULL OR p.last_message_at < ?3 OR (p.last_message_at = ?3 AND p.conversation_id < ?4))
     ORDER BY p.last_message_at DESC, p.conversation_id DESC LIMIT ?5`,
  )
    .bind(userId, workspaceId, after?.at ?? null, after?.id ?? null, limit + 1)
    .all<ConversationRow>();
  const page = results.slice(0, limit).map(toConversation);
  const last = page.at(-1);
  return {
    conversations: page,
    next_cursor: results.length > limit && last ? encodeCursor(last.last_message_at, last.id) : null,
  };
}

/** The messages (from the conversation's room), oldest first; an artifact deleted since is no longer listed on its message. */
export async function listMessages(
  env: Env,
  workspaceId: string,
  userId: string,
  conversationId: string,
): Promise<Message[]> {
  // RPC typing cannot express the parts' open shape; the room returns `Message`s.
  const messages = (await conversationRoom(env, conversationId).messages(conversationId, workspaceId)) as Message[];
  const referenced = messages.flatMap((m) => m.artifact_ids);
  const present = new Set(await visibleArtifactIds(env, workspaceId, userId, referenced));
  for (const m of messages) m.artifact_ids = m.artifact_ids.filter((id) => present.has(id));
  return messages;
}

/**
 * Deletes a conversation the caller takes part in, with its participants; its artifacts stay
 * with their producers, detached, and its apps keep running with no conversation, in the same
 * batch. Then its room's storage goes (messages, turns, streams).
 */
export async function deleteConversation(
  env: Env,
  workspaceId: string,
  userId: string,
  id: string,
  event: AuditEventInput,
): Promise<void> {
  await participantConversation(env, workspaceId, userId, id);
  const detach = detachConversationArtifacts(env, workspaceId, id).toSQL();
  const detachApps = detachConversationApps(env, workspaceId, id).toSQL();
  await env.DB.batch([
    env.DB.prepare(detach.sql).bind(...detach.params),
    env.DB.prepare(detachApps.sql).bind(...detachApps.params),
    env.DB.prepare("DELETE FROM messages WHERE conversation_id = ?1").bind(id),
    env.DB.prepare("DELETE FROM conversation_participants WHERE conversation_id = ?1").bind(id),
    env.DB.prepare("DELETE FROM conversations WHERE id = ?1 AND workspace_id = ?2").bind(id, workspaceId),
    d1Statement(env, auditInBatch(env, event, { onlyIf: PREVIOUS_STATEMENT_CHANGED })),
  ]);
  await conversationRoom(env, id).destroy();
}

/** Adds a member of the same workspace; idempotent. Returns whether they were added now. */
export async function addParticipant(
  env: Env,
  workspaceId: string,
  callerId: string,
  id: string,
  userId: string,
  event: AuditEventInput,
): Promise<{ conversation: Conversation; added: boolean }> {
  await participantConversation(env, workspaceId, callerId, id);
  const [inserted] = await env.DB.batch([
    env.DB.prepare(
      `INSERT INTO conversation_participants (conversation_id, user_id, workspace_id, last_message_at, added_at)
       SELECT c.id, u.id, c.workspace_id, c.last_message_at, ?4 FROM conversations c, users u
       WHERE c.id = ?1 AND u.id = ?2 AND u.workspace_id = ?3 AND u.erased_at IS NULL
       ON CONFLICT DO NOTHING RETURNING user_id`,
    ).bind(id, userId, workspaceId, nowIso()),
    // Recorded when the user is a member (else the 404 below), `added` when the insert was new.
    d1Statement(
      env,
      auditInBatch(env, event, {
        from: {
          source: sql`FROM users u WHERE u.id = ${userId} AND u.workspace_id = ${workspaceId} AND u.erased_at IS NULL`,
        },
        detailsFromSql: { added: jsonBoolean(PREVIOUS_STATEMENT_CHANGED) },
      }),
    ),
  ]);
  if (!inserted?.results.length) {
    const member = await env.DB.prepare("SELECT 1 FROM users WHERE id = ?1 AND workspace_id = ?2 AND erased_at IS NULL")
      .bind(userId, workspaceId)
      .first();
    if (!member) throw notFound("No such user in this workspace");
  }
  return {
    conversation: await participantConversation(env, workspaceId, callerId, id),
    added: !!inserted?.results.length,
  };
}
