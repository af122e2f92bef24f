import { z } from "@hono/zod-openapi";
import { cursorPageQuery, nextCursor } from "../http/query";

export const ENDPOINT_KINDS = ["system", "custom"] as const;
export const PLANES = ["team", "agent"] as const;
export const REPLY_POLICIES = ["auto", "review", "never"] as const;
export const SENDER_POLICIES = ["anyone", "members", "allowlist"] as const;
export const CATEGORY_ACTIONS = ["reply", "review", "ignore", "escalate"] as const;
/** What triage may call a message; `category_policy` keys are these. */
export const CATEGORIES = [
  "question",
  "request",
  "complaint",
  "sales",
  "billing",
  "notification",
  "personal",
  "other",
] as const;

/** Inbound: `received` → `triaged` → one of the rest. Outbound: `awaiting_review` → `approved` → `sent` | `send_failed`, or `rejected`. */
export const INBOUND_STATES = [
  "received",
  "triaged",
  "replied",
  "awaiting_review",
  "no_reply",
  "escalated",
  "rejected_sender",
  "spam",
  "dead_letter",
] as const;
export const OUTBOUND_STATES = ["draft", "awaiting_review", "approved", "sent", "rejected", "send_failed"] as const;

/** Mailbox names: lower-case letters, digits, dots and underscores (a hyphen separates the workspace's slug). */
const LOCALPART = /^[a-z0-9](?:[a-z0-9._]{0,30}[a-z0-9])?$/;
export const RESERVED_LOCALPARTS = new Set([
  "postmaster",
  "abuse",
  "admin",
  "administrator",
  "hostmaster",
  "webmaster",
  "mailer-daemon",
  "noreply",
  "no-reply",
  "root",
  "security",
]);

export const LocalpartSchema = z
  .string()
  .min(1)
  .max(32)
  .regex(LOCALPART, "1-32 characters: a-z, 0-9, dots and underscores, starting and ending with a letter or digit")
  .openapi({ example: "support" });

const AllowPatternSchema = z
  .string()
  .min(1)
  .max(254)
  .regex(/^[^\s@]*@[^\s@]+$|^\*@[^\s@]+$/, "a glob of an address, such as *@acme.com or ada@acme.com");

const CategoryPolicySchema = z
  .partialRecord(z.enum(CATEGORIES), z.enum(CATEGORY_ACTIONS))
  .openapi({ description: "What to do per triage category (default `reply`)", example: { complaint: "review" } });

const DeliverToSchema = z
  .object({ user_ids: z.array(z.uuid()).min(1).max(20) })
  .openapi({ description: "Review owners; default the workspace's first admin" });

const LanguageSchema = z
  .string()
  .regex(/^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$/, "a language tag such as en or pt-BR")
  .max(12);

/** The settings an admin writes; everything has a default. */
const EndpointSettings = {
  plane: z.enum(PLANES),
  agent_id: z
    .uuid()
    .nullable()
    .openapi({
      description:
        "The agent that answers (default: the workspace's default agent). While that agent is disabled, the " +
        "mailbox's mail is kept but not answered (`no_reply`, reason `agent_disabled`); no other agent answers in its place.",
    }),
  enabled: z.boolean(),
  reply_policy: z.enum(REPLY_POLICIES),
  sender_policy: z.enum(SENDER_POLICIES),
  allow_patterns: z.array(AllowPatternSchema).max(100),
  allow_escalation: z.boolean(),
  category_policy: CategoryPolicySchema,
  deliver_to: DeliverToSchema.nullable(),
  default_reply_lang: LanguageSchema.nullable(),
  instructions: z.string().max(4000).nullable(),
  max_turns_per_day: z.number().int().min(0).max(100_000).nullable(),
  max_turns_per_sender_day: z.number().int().min(0).max(100_000).nullable(),
  spam_score_max: z.number().min(0).max(1).nullable(),
};

export const CreateEndpointSchema = z
  .object({ localpart: LocalpartSchema, ...EndpointSettings })
  .partial()
  .required({ localpart: true })
  .strict()
  .openapi("EmailEndpointCreate");
export type CreateEndpoint = z.infer<typeof CreateEndpointSchema>;

export const UpdateEndpointSchema = z
  .object({ localpart: LocalpartSchema, ...EndpointSettings })
  .partial()
  .strict()
  .openapi("EmailEndpointUpdate");
export type UpdateEndpoint = z.infer<typeof UpdateEndpointSchema>;

export const EndpointSchema = z
  .object({
    id: z.uuid(),
    kind: z.enum(ENDPOINT_KINDS),
    is_system: z.boolean(),
    localpart: z.string(),
    address: z.string().openapi({ description: "The full mailbox address" }),
    plane: z.enum(PLANES),
    agent_id: z.uuid().optional(),
    enabled: z.boolean(),
    reply_policy: z.enum(REPLY_POLICIES),
    sender_policy: z.enum(SENDER_POLICIES),
    allow_patterns: z.array(z.string()),
    allow_escalation: z.boolean(),
    court_intake_enabled: z.boolean().openapi({ description: "Court intake is not offered: always false" }),
    court_secure_mail_password_set: z.boolean().openapi({ description: "Always false" }),
    category_policy: z.record(z.string(), z.string()).optional(),
    deliver_to: z.object({ user_ids: z.array(z.uuid()) }).optional(),
    default_reply_lang: z.string().optional(),
    instructions: z.string().optional(),
    max_turns_per_day: z.number().int().optional(),
    max_turns_per_sender_day: z.number().int().optional(),
    spam_score_max: z.number().optional(),
    reply_languages: z
      .record(z.string(), z.number())
      .openapi({ description: "Share of sent replies per language (0-1)", example: { en: 0.75, de: 0.25 } }),
    message_count: z.number().int(),
    needs_attention: z.number().int().openapi({ description: "Replies awaiting review plus escalated mail" }),
    received: z.number().int(),
    replied: z.number().int(),
    awaiting_review: z.number().int(),
    unrouted: z.number().int(),
    escalated: z.number().int(),
    last_occurred_at: z.iso.datetime().optional(),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .openapi("EmailEndpoint");
export type Endpoint = z.infer<typeof EndpointSchema>;

export const EndpointListSchema = z
  .object({
    endpoints: z.array(EndpointSchema),
    outbound_mailbox_localpart: z.string().openapi({ example: "team" }),
    domain: z.string(),
    tenant_email_slug: z.string(),
  })
  .openapi("EmailEndpointList");

export const EndpointIdParamSchema = z.object({
  id: z.uuid().openapi({ param: { name: "id", in: "path" }, description: "The endpoint's id" }),
});

export const ReplyRowSchema = z
  .object({
    email_message_id: z.uuid(),
    direction: z.enum(["inbound", "outbound"]),
    from_addr: z.string(),
    to_addrs: z.array(z.string()),
    subject: z.string().optional(),
    handling_state: z.string(),
    occurred_at: z.iso.datetime(),
    agent_id: z.uuid().optional(),
    conversation_id: z.uuid().optional(),
    endpoint_id: z.uuid().optional(),
    endpoint_localpart: z.string().optional(),
    endpoint_plane: z.string().optional(),
    llm_category: z.string().optional(),
    llm_summary: z.string().optional(),
    review_owner_id: z.uuid().optional(),
    body: z.string().optional().openapi({ description: "The drafted (or sent) reply" }),
    last_error: z.string().optional().openapi({ description: "Why the last send failed" }),
  })
  .openapi("EmailReplyRow");
export type ReplyRow = z.infer<typeof ReplyRowSchema>;

export const ReplyListSchema = z
  .object({ rows: z.array(ReplyRowSchema), next_cursor: nextCursor })
  .openapi("EmailReplyList");

export const RepliesQuerySchema = z.object({
  reviewed: z
    .enum(["true", "false"])
    .default("false")
    .transform((v) => v === "true")
    .openapi({ param: { name: "reviewed", in: "query" }, description: "false: to review; true: already reviewed" }),
  ...cursorPageQuery,
});

export const ReplyIdParamSchema = z.object({
  email_message_id: z
    .uuid()
    .openapi({ param: { name: "email_message_id", in: "path" }, description: "The reply's id" }),
});

export const ReviewRequestSchema = z
  .object({
    action: z.enum(["approve", "reject"]),
    body: z.string().min(1).max(20_000).optional().openapi({ description: "Replaces the drafted text before sending" }),
  })
  .strict()
  .openapi("EmailReviewRequest");

/** What triage asks the model for (structured output). */
export const TriageSchema = z.object({
  category: z.enum(CATEGORIES),
  summary: z.string().max(500),
  language: z.string().max(12),
  spam_score: z.number().min(0).max(1),
});
export type Triage = z.infer<typeof TriageSchema>;
