import { and, eq, gt } from "drizzle-orm";
import { nowIso } from "../../platform/env";
import { newId } from "../../platform/ids";
import { messages } from "./schema";
import { insertMessage, lastMessage, type RoomDb, recentHistory } from "./store";
import type { TurnClaim, TurnInput } from "./types";

/** A new turn's question: the member's message, stored; the history is what came before it. */
export function claimNewMessage(db: RoomDb, input: TurnInput): TurnClaim {
  const history = input.history ?? recentHistory(db);
  const id = input.userMessageId ?? newId();
  insertMessage(db, {
    id,
    role: "user",
    authorUserId: input.userId,
    agentId: null,
    content: input.content,
    parts: [{ type: "text", text: input.content }],
    toolCalls: [],
    artifactIds: [],
    createdAt: nowIso(),
  });
  return { userMessageId: id, prompt: input.content, history, messagesAdded: 1 };
}

/**
 * Regenerating: the last reply goes (the new one takes its place) and the last question is
 * asked again; null when there is no question to answer.
 */
export function claimRegeneration(db: RoomDb): TurnClaim | null {
  const question = lastMessage(db, "user");
  if (!question) return null;
  const removed = db
    .delete(messages)
    .where(and(eq(messages.role, "assistant"), gt(messages.position, question.position)))
    .returning({ id: messages.id })
    .all().length;
  return {
    userMessageId: question.id,
    prompt: question.content,
    history: recentHistory(db, question.position),
    messagesAdded: -removed,
  };
}
