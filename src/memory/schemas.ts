import { z } from "@hono/zod-openapi";
import { idPathParams } from "../http/params";

/** Longest fact an agent may store, in characters. */
export const FACT_MAX_LENGTH = 500;
/** Longest freeze reason, in characters. */
export const REASON_MAX_LENGTH = 500;

export const FactSchema = z
  .object({
    id: z.uuid(),
    content: z.string(),
    agent_slug: z.string().openapi({ description: "The agent whose `remember` tool wrote the fact" }),
    created_at: z.iso.datetime(),
  })
  .openapi("MemoryFact");
export type Fact = z.infer<typeof FactSchema>;

export const FactListSchema = z
  .object({ facts: z.array(FactSchema).openapi({ description: "The caller's facts, newest first" }) })
  .openapi("MemoryFactList");

export const FactIdParamSchema = idPathParams("The fact's id");

export const FreezeSchema = z
  .object({
    agent_slug: z.string(),
    frozen: z.literal(true),
    reason: z.string().optional().openapi({ description: "Absent when the caller gave none" }),
    created_at: z.iso.datetime().openapi({ description: "When the caller first froze the agent" }),
  })
  .openapi("MemoryFreeze");
export type Freeze = z.infer<typeof FreezeSchema>;

export const FreezeListSchema = z
  .object({ freezes: z.array(FreezeSchema).openapi({ description: "Newest first" }) })
  .openapi("MemoryFreezeList");

export const UnfreezeSchema = z.object({ agent_slug: z.string(), frozen: z.literal(false) }).openapi("MemoryUnfreeze");

// Any string up to 64 characters is looked up: one that names no agent is a 404 to freeze, and
// simply not frozen (200) to unfreeze.
export const AgentSlugParamSchema = z.object({
  agent_slug: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: "agent_slug", in: "path" }, description: "The agent's slug or one of its aliases" }),
});

export const FreezeRequestSchema = z
  .object({
    reason: z
      .string()
      .trim()
      .max(REASON_MAX_LENGTH)
      .refine((s) => !/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(s), "no control characters")
      .optional()
      .openapi({ description: "Why the caller froze the agent; kept with the freeze, never audited" }),
  })
  .strict()
  .openapi("MemoryFreezeRequest");
export type FreezeRequest = z.infer<typeof FreezeRequestSchema>;
