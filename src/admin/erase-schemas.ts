import { z } from "@hono/zod-openapi";

export const EraseRequestSchema = z
  .object({
    confirm: z.literal(true, { error: "confirm must be true" }),
    reason: z.string().max(500).optional(),
  })
  .strict()
  .openapi("EraseRequest");

export const ErasureSummarySchema = z
  .object({
    user_id: z.uuid(),
    erased: z.literal(true),
    counts: z.record(z.string(), z.number().int()).openapi({
      description:
        "What each area removed, by counter name; areas add their own counters. Today: `tokens` and `sessions` " +
        "revoked, `oauth_grants` revoked (grants and consents), `conversations_left`, `approvals_anonymized` " +
        "(approvals the user asked for or decided, which keep their decision but lose the user), `memory_facts` and " +
        "`memory_freezes` deleted, `artifacts` deleted (those in no remaining conversation), `audit_events_redacted`.",
      example: {
        tokens: 2,
        sessions: 1,
        oauth_grants: 0,
        conversations_left: 3,
        approvals_anonymized: 1,
        memory_facts: 4,
        memory_freezes: 0,
        artifacts: 1,
        audit_events_redacted: 14,
      },
    }),
  })
  .openapi("ErasureSummary");
