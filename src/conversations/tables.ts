/** Conversations, who may read and post in them, and their messages. */
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { agents } from "../agents/tables";
import { createdAt, ref } from "../db/columns";
import { users } from "../identity/tables";
import { workspaces } from "../workspace/tables";

export const conversations = sqliteTable(
  "conversations",
  {
    id: text("id").primaryKey(),
    workspaceId: ref("workspace_id", () => workspaces.id),
    title: text("title"),
    mode: text("mode", { enum: ["standard", "fast"] }).notNull(),
    agentId: ref("agent_id", () => agents.id),
    createdBy: ref("created_by", () => users.id),
    /** No longer written: turns run in the conversation's room. Dropped with `messages` in a later migration. */
    turnId: text("turn_id"),
    turnStartedAt: text("turn_started_at"),
    createdAt: createdAt(),
    lastMessageAt: text("last_message_at").notNull(),
    /** Kept by the conversation's room: its messages live there, this is the directory's count. */
    messageCount: integer("message_count").notNull().default(0),
    /** The chat id an AI SDK client chose for it (`POST /v1/api/chat`), unique per creator. */
    clientId: text("client_id"),
  },
  (t) => [
    index("conversations_workspace_idx").on(t.workspaceId, t.id),
    uniqueIndex("conversations_client_id_idx").on(t.workspaceId, t.createdBy, t.clientId),
  ],
);

/** Who may read and post: the creator, everyone who posted, and those added. */
export const conversationParticipants = sqliteTable(
  "conversation_participants",
  {
    conversationId: ref("conversation_id", () => conversations.id, { onDelete: "cascade" }),
    userId: ref("user_id", () => users.id),
    workspaceId: text("workspace_id").notNull(),
    /** Copied from the conversation, so "my conversations, newest first" is one index range. */
    lastMessageAt: text("last_message_at").notNull(),
    addedAt: text("added_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.conversationId, t.userId] }),
    index("participants_user_recent_idx").on(t.userId, t.lastMessageAt, t.conversationId),
  ],
);

/**
 * Messages of conversations from before rooms held them: a room copies its conversation's rows
 * on first use. Nothing writes here any more; a later migration drops the table.
 */
export const messages = sqliteTable(
  "messages",
  {
    id: text("id").primaryKey(),
    conversationId: ref("conversation_id", () => conversations.id, { onDelete: "cascade" }),
    workspaceId: text("workspace_id").notNull(),
    role: text("role", { enum: ["user", "assistant"] }).notNull(),
    authorUserId: text("author_user_id").references(() => users.id),
    agentId: text("agent_id").references(() => agents.id),
    content: text("content").notNull(),
    /** JSON `[{ name, ok }]`. */
    toolCalls: text("tool_calls").notNull().default("[]"),
    /** JSON array of artifact ids. */
    artifactIds: text("artifact_ids").notNull().default("[]"),
    inputTokens: integer("input_tokens").notNull().default(0),
    outputTokens: integer("output_tokens").notNull().default(0),
    credits: integer("credits").notNull().default(0),
    createdAt: createdAt(),
  },
  (t) => [index("messages_conversation_idx").on(t.conversationId, t.id)],
);

/**
 * The approvals agents asked for (the tool calls their rooms hold back), so that what waits for
 * a member is listed across conversations and a decision is taken once.
 */
export const approvals = sqliteTable(
  "approvals",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull(),
    conversationId: ref("conversation_id", () => conversations.id, { onDelete: "cascade" }),
    turnId: text("turn_id").notNull(),
    toolName: text("tool_name").notNull(),
    /** SHA-256 (hex) of the call's arguments as canonical JSON; never the arguments. */
    inputDigest: text("input_digest").notNull(),
    /** Null once that user is erased. */
    requestedBy: text("requested_by"),
    requestedAt: text("requested_at").notNull(),
    expiresAt: text("expires_at").notNull(),
    state: text("state", { enum: ["pending", "approved", "denied", "expired"] }).notNull(),
    decidedBy: text("decided_by"),
    decidedAt: text("decided_at"),
    reason: text("reason"),
  },
  (t) => [
    index("approvals_pending_idx").on(t.state, t.conversationId, t.requestedAt),
    index("approvals_turn_idx").on(t.conversationId, t.turnId),
    // Erasure looks up a user's approvals by who asked and who decided.
    index("approvals_requested_by_idx").on(t.requestedBy),
    index("approvals_decided_by_idx").on(t.decidedBy),
  ],
);
