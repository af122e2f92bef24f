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
    counts: z.object({
      tokens: z.number().int(),
      sessions: z.number().int(),
      oauth_grants: z.number().int(),
      memory_freezes: z.number().int(),
      artifacts: z.number().int(),
      conversations_left: z.number().int(),
      audit_events_redacted: z.number().int(),
    }),
  })
  .openapi("ErasureSummary");
