import { eq, type Placeholder, sql } from "drizzle-orm";
import { conversationParticipants, conversations } from "../db/schema";
import { type Db, db } from "../platform/db";

/**
 * The directory row's side of a new message (kept by the conversation's room): the
 * conversation's and its participants' `last_message_at`, and its message count.
 */
export function messageAdded(env: Env, conversationId: string, at: string, added = 1) {
  return messageAddedQueries(db(env), conversationId, at, added);
}

/** `messageAdded` with placeholders (`conversationId`, `at`, `added`), for statements prepared once. */
export function preparedMessageAdded(d: Db) {
  const [conversation, participants] = messageAddedQueries(
    d,
    sql.placeholder("conversationId"),
    sql.placeholder("at"),
    sql.placeholder("added"),
  );
  return [conversation.prepare(), participants.prepare()] as const;
}

type Bound<T> = T | Placeholder;

function messageAddedQueries(d: Db, conversationId: Bound<string>, at: Bound<string>, added: Bound<number>) {
  return [
    d
      .update(conversations)
      .set({ lastMessageAt: sql`${at}`, messageCount: sql`${conversations.messageCount} + ${added}` })
      .where(eq(conversations.id, conversationId)),
    d
      .update(conversationParticipants)
      .set({ lastMessageAt: sql`${at}` })
      .where(eq(conversationParticipants.conversationId, conversationId)),
  ] as const;
}
