import type { AuditEventInput } from "../audit/events";
import { isUniqueViolation } from "../platform/db";
import { badRequest } from "../platform/problem";
import type { ChatMessage, Conversation } from "./schemas";
import { chatConversation, createConversation } from "./service";

const MAX_QUESTION = 32_000;

/** The last user message of an AI SDK request: the turn's new input (its text parts). */
export function questionOf(messages: ChatMessage[]): { id: string; text: string } {
  const last = messages.findLast((m) => m.role === "user");
  const text = (last?.parts ?? [])
    .filter((p): p is { type: "text"; text: string } => p.type === "text" && typeof p.text === "string")
    .map((p) => p.text)
    .join("\n")
    .trim();
  if (!last || !text) throw badRequest("no_user_message", "The messages end with no user message that has text");
  if (text.length > MAX_QUESTION)
    throw badRequest("message_too_long", `A message has at most ${MAX_QUESTION} characters`);
  return { id: last.id, text };
}

/** A new conversation for a client's chat id; of two opened at once, both get the same one. */
export async function openChat(
  env: Env,
  workspaceId: string,
  userId: string,
  chat: { id: string; agent_slug?: string; mode?: "standard" | "fast" },
  event: (conversation: Conversation) => AuditEventInput,
): Promise<Conversation> {
  try {
    return await createConversation(
      env,
      workspaceId,
      userId,
      { agent_slug: chat.agent_slug, mode: chat.mode, client_id: chat.id },
      event,
    );
  } catch (e) {
    if (!isUniqueViolation(e)) throw e;
    const opened = await chatConversation(env, workspaceId, userId, chat.id);
    if (!opened) throw e;
    return opened;
  }
}
