import type { UIMessage, UIMessageChunk } from "ai";
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import type { AuditActor } from "../../audit/events";

/**
 * A conversation room's own SQLite (one Durable Object per conversation): its messages, its
 * turns and their stream events. D1 keeps only the directory row.
 */

export type ToolCallSummary = { name: string; ok: boolean };
export type StoredPart = UIMessage["parts"][number];
export type ModelFailure = { status: number | null; message: string };

/** What a turn needs to be settled after its room restarted: who asked, with which agent and profile. */
export type TurnContextRow = {
  workspaceId: string;
  actor: AuditActor;
  agentId: string;
  model: string | null;
  profile: string;
  /**
   * The question's side of the directory (its message count change and time) while not written
   * yet: it goes in the batch of the turn's end, or on its own once the turn runs longer.
   */
  question?: { added: number; at: string };
  /** Who asked and from where, so a turn that waited for an approval resumes as it started. */
  userId?: string;
  workspaceName?: string;
  origin?: string;
  /** The stream segment running: 1, then one more each time the turn resumes after a decision. */
  segment?: number;
  /** While the turn waits for approvals: when the first of them expires. */
  approvalExpiresAt?: string;
};

/** Every message in the order it was posted; `position` orders, `id` names. */
export const messages = sqliteTable("messages", {
  position: integer("position").primaryKey({ autoIncrement: true }),
  id: text("id").notNull().unique(),
  role: text("role", { enum: ["user", "assistant"] }).notNull(),
  authorUserId: text("author_user_id"),
  agentId: text("agent_id"),
  /** The text of the message, as the JSON API and the model's history read it. */
  content: text("content").notNull(),
  /** AI SDK `UIMessage` parts: text, reasoning, tool calls with input and output, files. */
  parts: text("parts", { mode: "json" }).$type<StoredPart[]>().notNull(),
  toolCalls: text("tool_calls", { mode: "json" }).$type<ToolCallSummary[]>().notNull(),
  artifactIds: text("artifact_ids", { mode: "json" }).$type<string[]>().notNull(),
  inputTokens: integer("input_tokens").notNull().default(0),
  outputTokens: integer("output_tokens").notNull().default(0),
  credits: integer("credits").notNull().default(0),
  /** The reply of a turn someone stopped: a prefix of what the model would have said. */
  stopped: integer("stopped", { mode: "boolean" }).notNull().default(false),
  createdAt: text("created_at").notNull(),
});

export const TURN_STATES = ["accepted", "streaming", "awaiting_approval", "completed", "stopped", "failed"] as const;
export type TurnState = (typeof TURN_STATES)[number];

/** One agent turn; its id is the assistant message's id. */
export const turns = sqliteTable(
  "turns",
  {
    position: integer("position").primaryKey({ autoIncrement: true }),
    id: text("id").notNull().unique(),
    userMessageId: text("user_message_id").notNull(),
    state: text("state", { enum: TURN_STATES }).notNull(),
    /** The client's `Idempotency-Key`: a repeat within 24 h answers this turn. */
    idempotencyKey: text("idempotency_key").unique(),
    /** What the key was first used for; the same key with other content is refused. */
    requestHash: text("request_hash"),
    /** Why the model did not answer, as the provider said it. */
    failure: text("failure", { mode: "json" }).$type<ModelFailure>(),
    context: text("context", { mode: "json" }).$type<TurnContextRow>().notNull(),
    startedAt: text("started_at").notNull(),
    endedAt: text("ended_at"),
  },
  // Every intake asks for a turn waiting for approvals, a restart for the running ones: by
  // state, not by reading every turn the conversation ever had.
  (t) => [index("turns_state_idx").on(t.state)],
);

/** A turn's UI message stream, chunk by chunk, numbered from 1 without gaps. */
export const streamEvents = sqliteTable(
  "stream_events",
  {
    turnId: text("turn_id").notNull(),
    seq: integer("seq").notNull(),
    chunk: text("chunk", { mode: "json" }).$type<UIMessageChunk>().notNull(),
  },
  (t) => [primaryKey({ columns: [t.turnId, t.seq] })],
);

/** The room's identity (conversation and workspace ids) and its one-time import from D1. */
export const roomMeta = sqliteTable("meta", {
  key: text("key").primaryKey(),
  value: text("value").notNull(),
});
