import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { createdAt, ref } from "../db/columns";
import { workspaces } from "../workspace/tables";

/**
 * A workspace mailbox (`<localpart>-<email slug>@<EMAIL_DOMAIN>`). The system endpoint `team`
 * is made at sign-up; admins add custom ones. JSON columns hold the policies.
 */
export const emailEndpoints = sqliteTable(
  "email_endpoints",
  {
    id: text("id").primaryKey(),
    workspaceId: ref("workspace_id", () => workspaces.id),
    localpart: text("localpart").notNull(),
    kind: text("kind").notNull(),
    plane: text("plane").notNull(),
    agentId: text("agent_id"),
    enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
    replyPolicy: text("reply_policy").notNull(),
    senderPolicy: text("sender_policy").notNull(),
    allowPatterns: text("allow_patterns").notNull().default("[]"),
    allowEscalation: integer("allow_escalation", { mode: "boolean" }).notNull().default(false),
    categoryPolicy: text("category_policy").notNull().default("{}"),
    deliverTo: text("deliver_to"),
    defaultReplyLang: text("default_reply_lang"),
    instructions: text("instructions"),
    maxTurnsPerDay: integer("max_turns_per_day"),
    maxTurnsPerSenderDay: integer("max_turns_per_sender_day"),
    spamScoreMax: integer("spam_score_max_pct"),
    createdAt: createdAt(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [uniqueIndex("email_endpoints_localpart_idx").on(t.workspaceId, t.localpart)],
);

/**
 * One inbound or outbound mail. Inbound: the raw message in R2 (`raw_key`), what triage
 * found, and its handling state. Outbound: a drafted reply to `reply_to_id`, its review and send.
 */
export const emailMessages = sqliteTable(
  "email_messages",
  {
    id: text("id").primaryKey(),
    workspaceId: ref("workspace_id", () => workspaces.id),
    endpointId: text("endpoint_id").notNull(),
    direction: text("direction").notNull(),
    replyToId: text("reply_to_id"),
    fromAddr: text("from_addr").notNull(),
    toAddrs: text("to_addrs").notNull(),
    subject: text("subject"),
    messageIdHeader: text("message_id_header"),
    referencesHeader: text("references_header"),
    rawKey: text("raw_key"),
    size: integer("size").notNull().default(0),
    unrouted: integer("unrouted", { mode: "boolean" }).notNull().default(false),
    autoSubmitted: integer("auto_submitted", { mode: "boolean" }).notNull().default(false),
    dmarc: text("dmarc").notNull().default("none"),
    handlingState: text("handling_state").notNull(),
    llmCategory: text("llm_category"),
    llmSummary: text("llm_summary"),
    language: text("language"),
    spamScore: integer("spam_score_pct"),
    agentId: text("agent_id"),
    conversationId: text("conversation_id"),
    reviewOwnerId: text("review_owner_id"),
    body: text("body"),
    lastError: text("last_error"),
    occurredAt: text("occurred_at").notNull(),
    reviewedAt: text("reviewed_at"),
    sentAt: text("sent_at"),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [
    index("email_messages_endpoint_idx").on(t.endpointId, t.direction, t.handlingState),
    index("email_messages_owner_idx").on(t.reviewOwnerId, t.handlingState),
    index("email_messages_state_idx").on(t.handlingState, t.occurredAt),
  ],
);
