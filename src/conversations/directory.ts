import { eq, sql } from "drizzle-orm";
import { conversationParticipants, conversations } from "../db/schema";
import { db } from "../platform/db";

/**
 * The directory row's side of a new message (kept by the conversation's room): the
 * conversation's and its participants' `last_message_at`, and its message count.
 */
export function messageAdded(env: Env, conversationId: string, at: string, added = 1) {
  const d = db(env);
  return [
    d
      .update(conversations)
      .set({ lastMessageAt: at, messageCount: sql`${conversations.messageCount} + ${added}` })
      .where(eq(conversations.id, conversationId)),
    d
      .update(conversationParticipants)
      .set({ lastMessageAt: at })
      .where(eq(conversationParticipants.conversationId, conversationId)),
  ] as const;
}
