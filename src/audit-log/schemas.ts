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

/** A required tree size or sequence number: an integer from 1; anything else is 400. */
const position = (name: string, where: "query" | "path", description: string) =>
  z
    .string()
    .regex(/^\d{1,15}$/, "must be an integer from 1")
    .transform(Number)
    .refine((n) => n >= 1, "must be an integer from 1")
    .openapi({ param: { name, in: where }, type: "integer", minimum: 1, maximum: 10 ** 15 - 1, description });

export const EventParamsSchema = z.object({ seq: position("seq", "path", "The event's sequence number") });

export const AuditEventWithLeafSchema = AuditEventSchema.extend({
  leaf: z.string().openapi({
    description:
      "Base64 of the event's Merkle leaf bytes: the UTF-8 entry encoding its `hash` covers (leaf hash = SHA-256(0x00 ‖ these bytes))",
  }),
}).openapi("AuditEventWithLeaf");

export const InclusionQuerySchema = z.object({
  seq: position("seq", "query", "The event's sequence number (leaf index = seq - 1)"),
  size: position("size", "query", "The tree size the proof is for (at least seq, at most the tree's size)"),
});

export const InclusionProofSchema = z
  .object({
    leaf_index: z.number().int(),
    tree_size: z.number().int(),
    hashes: z.array(z.string()).openapi({ description: "Base64 SHA-256 hashes, leaf side first (RFC 9162 §2.1.3)" }),
  })
  .openapi("AuditInclusionProof");

export const ConsistencyQuerySchema = z.object({
  from: position("from", "query", "The older tree size"),
  to: position("to", "query", "The newer tree size (at least from, at most the tree's size)"),
});

export const ConsistencyProofSchema = z
  .object({
    from: z.number().int(),
    to: z.number().int(),
    hashes: z.array(z.string()).openapi({ description: "Base64 SHA-256 hashes in RFC 9162 §2.1.4 order" }),
  })
  .openapi("AuditConsistencyProof");
