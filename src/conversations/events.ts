import type { AuditEventOf } from "../audit/events";
import type { Conversation } from "./schemas";

/** The event of a conversation opened for the caller, whichever route opened it. */
export const conversationCreated = (conversation: Conversation): AuditEventOf => ({
  kind: "conversation.create",
  target: `conversation:${conversation.id}`,
  agentId: conversation.agent_id,
  conversationId: conversation.id,
  details: { mode: conversation.mode, agent_slug: conversation.agent_slug },
});
