import { z } from "@hono/zod-openapi";
import { queryFilter, queryInteger } from "../http/query";

export const AuditQuerySchema = z.object({
  page: queryInteger({
    name: "page",
    default: 1,
    clamp: [1, Number.MAX_SAFE_INTEGER],
    description: "1-based page, default 1",
  }),
  page_size: queryInteger({
    name: "page_size",
    default: 50,
    clamp: [1, 200],
    description: "Default 50, clamped to 1-200",
  }),
  days: queryInteger({
    name: "days",
    default: 90,
    description: "Lookback in days, default 90; 0 or negative means all time",
  }),
  // The string filters have no length bound: the URL bounds them, and any value is a filter that may match nothing.
  kind: queryFilter("kind", z.string()),
  outcome: queryFilter("outcome", z.string()),
  actor_kind: queryFilter("actor_kind", z.string()),
  agent_id: queryFilter("agent_id", z.uuid()),
  conversation_id: queryFilter("conversation_id", z.uuid()),
  q: queryFilter("q", z.string(), "Case-insensitive substring of target or intent"),
});

export const AuditEventSchema = z
  .object({
    seq: z.number().int(),
    id: z.uuid(),
    occurred_at: z.iso.datetime(),
    kind: z.string(),
    outcome: z.enum(["success", "denied", "error"]),
    actor_kind: z.enum(["user", "token", "oauth_client", "system"]),
    actor_id: z.string().nullable(),
    agent_id: z.string().nullable(),
    conversation_id: z.string().nullable(),
    target: z.string(),
    intent: z.string(),
    details: z.record(z.string(), z.unknown()),
    details_digest: z.string(),
    prev_hash: z.string(),
    hash: z.string(),
  })
  .openapi("AuditEvent");

export const AuditListSchema = z
  .object({
    events: z.array(AuditEventSchema),
    total: z.number().int(),
    page: z.number().int(),
    page_size: z.number().int(),
  })
  .openapi("AuditEventList");

export const VerifyQuerySchema = z.object({
  limit: queryInteger({
    name: "limit",
    default: 10_000,
    clamp: [1, 100_000],
    description: "Default 10000, clamped to 1-100000",
  }),
});

export const VerifyResultSchema = z
  .object({
    ok: z.boolean(),
    checked: z.number().int(),
    first_seq: z.number().int().nullable(),
    last_seq: z.number().int().nullable(),
    failure_seq: z.number().int().nullable(),
    break_type: z.enum(["content", "linkage"]).nullable(),
  })
  .openapi("ChainVerification");
