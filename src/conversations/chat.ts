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

const APPROVAL_ID = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * The decisions an AI SDK client sends after `addToolApprovalResponse`: the messages end with
 * the assistant's, whose tool parts are `approval-responded` with `approval: { id, approved,
 * reason? }`. Null when the request carries none (a new question).
 */
export function approvalResponsesOf(
  messages: ChatMessage[],
): { approvalId: string; approved: boolean; reason: string | null }[] | null {
  const last = messages.at(-1);
  if (last?.role !== "assistant") return null;
  const answered = last.parts.filter((p) => p.state === "approval-responded");
  if (!answered.length) return null;
  return answered.map((p) => {
    const approval = (p.approval ?? {}) as { id?: unknown; approved?: unknown; reason?: unknown };
    const { id, approved, reason } = approval;
    if (typeof id !== "string" || !APPROVAL_ID.test(id) || typeof approved !== "boolean")
      throw badRequest("invalid_approval", "An approval-responded tool part needs `approval: { id, approved }`");
    if (reason !== undefined && (typeof reason !== "string" || reason.length > 1000))
      throw badRequest("invalid_approval", "An approval's reason is a string of at most 1000 characters");
    return { approvalId: id, approved, reason: reason?.trim() || null };
  });
}
