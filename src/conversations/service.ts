import { and, desc, eq, exists, isNull, lt, or, type Placeholder, sql } from "drizzle-orm";
import { resolveAgent } from "../agents/service";
import { detachConversationApps } from "../apps/service";
import { detachConversationArtifacts, visibleArtifactIds } from "../artifacts/service";
import { type AuditEventInput, auditInBatch, jsonBoolean, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { agents, approvals, conversationParticipants, conversations, messages, users } from "../db/schema";
import { decodeCursor, encodeCursor } from "../platform/cursor";
import { type Db, db, parseJsonArray } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { literalLimit } from "../platform/limit";
import { notFound } from "../platform/problem";
import { forgetConversation, knownParticipant, rememberParticipant } from "./participants";
import { conversationRoom } from "./room/client";
import type { Conversation, Message } from "./schemas";

/** A conversation as the API shows it: its row, its agent's slug and its participants. */
export const conversationColumns = {
  id: conversations.id,
  title: conversations.title,
  mode: conversations.mode,
  agent_id: conversations.agentId,
  agent_slug: agents.slug,
  created_by: conversations.createdBy,
  created_at: conversations.createdAt,
  last_message_at: conversations.lastMessageAt,
  participant_ids: sql<string>`(SELECT json_group_array(p2.user_id) FROM ${conversationParticipants} p2
    WHERE p2.conversation_id = ${conversations.id})`,
};

/** The join `conversationColumns` need: `.from(conversations).innerJoin(agents, conversationAgent)`. */
export const conversationAgent = eq(agents.id, conversations.agentId);

type ConversationRow = {
  [K in keyof typeof conversationColumns]: K extends "participant_ids" ? string : Conversation[K];
};

export const toConversation = (r: ConversationRow): Conversation => ({
  ...r,
  participant_ids: parseJsonArray(r.participant_ids),
});

const takesPart = (d: Db, userId: string | Placeholder) =>
  exists(
    d
      .select({ one: sql`1` })
      .from(conversationParticipants)
      .where(
        and(eq(conversationParticipants.conversationId, conversations.id), eq(conversationParticipants.userId, userId)),
      ),
  );

/** The query for the conversation `userId` takes part in (no row: not a participant, or another workspace). */
export function participantConversationQuery(env: Env, workspaceId: string, userId: string, id: string) {
  return db(env)
    .select(conversationColumns)
    .from(conversations)
    .innerJoin(agents, conversationAgent)
    .where(and(eq(conversations.id, id), eq(conversations.workspaceId, workspaceId), takesPart(db(env), userId)))
    .limit(literalLimit(1));
}

/**
 * The conversation an AI SDK chat id names for the caller: one they take part in with that
 * id, else the one made for that client id (by them); null when there is none. Another
 * workspace's conversation id is just a client id here.
 */
export async function chatConversation(
  env: Env,
  workspaceId: string,
  userId: string,
  chatId: string,
): Promise<Conversation | null> {
  const [row] = await db(env)
    .select(conversationColumns)
    .from(conversations)
    .innerJoin(agents, conversationAgent)
    .where(chatConversationOf(db(env), workspaceId, userId, chatId))
    .orderBy(desc(eq(conversations.id, chatId)))
    .limit(literalLimit(1));
  return row ? toConversation(row) : null;
}

const chatConversationOf = (
  d: Db,
  workspaceId: string | Placeholder,
  userId: string | Placeholder,
  chatId: string | Placeholder,
) =>
  and(
    eq(conversations.workspaceId, workspaceId),
    or(
      and(eq(conversations.id, chatId), takesPart(d, userId)),
      and(eq(conversations.clientId, chatId), eq(conversations.createdBy, userId)),
    ),
  );

/**
 * The conversation a turn is posted to, for a statement prepared once per isolate (placeholders
 * `workspaceId`, `userId`, `conversationId`): by its id, which the caller takes part in, or
 * (`chat`) by an AI SDK chat id as `chatConversation` finds it. The statement selects
 * `conversationColumns` (read with `toConversation`) from conversations joined to their agents, then
 * filters and orders it with these.
 */
export function turnConversationFilter(d: Db, by: "id" | "chat") {
  const workspaceId = sql.placeholder("workspaceId");
  const userId = sql.placeholder("userId");
  const id = sql.placeholder("conversationId");
  return by === "id"
    ? {
        where: and(eq(conversations.id, id), eq(conversations.workspaceId, workspaceId), takesPart(d, userId)),
        order: [],
      }
    : // The conversation by its id first (a chat id can also be another conversation's client id).
      { where: chatConversationOf(d, workspaceId, userId, id), order: [desc(eq(conversations.id, id))] };
}

export const noSuchConversation = () => notFound("No such conversation");

/** The conversation, when `userId` takes part in it; 404 otherwise (another workspace included). */
export async function participantConversation(
  env: Env,
  workspaceId: string,
  userId: string,
  id: string,
): Promise<Conversation> {
  const [row] = await participantConversationQuery(env, workspaceId, userId, id);
  if (!row) throw noSuchConversation();
  return toConversation(row);
}

/**
 * 404 unless `userId` takes part in the conversation, from this isolate's checks of the last
 * few seconds when it has one (see `participants.ts`): for a resumed stream, which follows
 * the request that started the turn.
 */
export async function requireParticipant(env: Env, workspaceId: string, userId: string, id: string): Promise<void> {
  if (knownParticipant(workspaceId, userId, id)) return;
  await participantConversation(env, workspaceId, userId, id);
  rememberParticipant(workspaceId, userId, id);
}

export async function createConversation(
  env: Env,
  workspaceId: string,
  userId: string,
  input: { agent_slug?: string; title?: string; mode?: "standard" | "fast"; client_id?: string },
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
  const d = db(env);
  await d.batch([
    d.insert(conversations).values({
      id,
      workspaceId,
      title: conversation.title,
      mode: conversation.mode,
      agentId: agent.id,
      createdBy: userId,
      clientId: input.client_id,
      createdAt: now,
      lastMessageAt: now,
    }),
    d
      .insert(conversationParticipants)
      .values({ conversationId: id, userId, workspaceId, lastMessageAt: now, addedAt: now }),
    auditInBatch(env, event(conversation)),
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
  const p = conversationParticipants;
  const results = await db(env)
    .select(conversationColumns)
    .from(p)
    .innerJoin(conversations, eq(conversations.id, p.conversationId))
    .innerJoin(agents, conversationAgent)
    .where(
      and(
        eq(p.userId, userId),
        eq(p.workspaceId, workspaceId),
        after
          ? or(lt(p.lastMessageAt, after.at), and(eq(p.lastMessageAt, after.at), lt(p.conversationId, after.id)))
          : undefined,
      ),
    )
    .orderBy(desc(p.lastMessageAt), desc(p.conversationId))
    .limit(literalLimit(limit + 1));
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
  await db(env).batch([
    ...deletionQueries(env, workspaceId, id),
    auditInBatch(env, event, { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
  ]);
  forgetConversation(id);
  await conversationRoom(env, id).destroy();
}

/**
 * A conversation's rows in D1, gone (the last statement deletes the directory row): its
 * artifacts and apps detached, its approvals, its participants, and messages from before rooms.
 */
export function deletionQueries(env: Env, workspaceId: string, id: string) {
  const d = db(env);
  return [
    detachConversationArtifacts(env, workspaceId, id),
    detachConversationApps(env, workspaceId, id),
    d.delete(messages).where(eq(messages.conversationId, id)),
    d.delete(approvals).where(eq(approvals.conversationId, id)),
    d.delete(conversationParticipants).where(eq(conversationParticipants.conversationId, id)),
    d.delete(conversations).where(and(eq(conversations.id, id), eq(conversations.workspaceId, workspaceId))),
  ] as const;
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
  const d = db(env);
  const member = and(eq(users.id, userId), eq(users.workspaceId, workspaceId), isNull(users.erasedAt));
  const [inserted] = await d.batch([
    d
      .insert(conversationParticipants)
      .select(
        d
          .select({
            conversationId: conversations.id,
            userId: users.id,
            workspaceId: conversations.workspaceId,
            lastMessageAt: conversations.lastMessageAt,
            addedAt: sql`${nowIso()}`.as("added_at"),
          })
          .from(conversations)
          .innerJoin(users, member)
          .where(eq(conversations.id, id)),
      )
      .onConflictDoNothing()
      .returning({ userId: conversationParticipants.userId }),
    // Recorded when the user is a member (else the 404 below), `added` when the insert was new.
    auditInBatch(env, event, {
      from: {
        source: sql`FROM users u WHERE u.id = ${userId} AND u.workspace_id = ${workspaceId} AND u.erased_at IS NULL`,
      },
      detailsFromSql: { added: jsonBoolean(PREVIOUS_STATEMENT_CHANGED) },
    }),
  ]);
  if (!inserted.length) {
    const [known] = await d.select({ id: users.id }).from(users).where(member);
    if (!known) throw notFound("No such user in this workspace");
  }
  return {
    conversation: await participantConversation(env, workspaceId, callerId, id),
    added: inserted.length > 0,
  };
}
