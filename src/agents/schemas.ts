import { z } from "@hono/zod-openapi";

export const AgentRowSchema = z
  .object({
    id: z.uuid(),
    slug: z.string(),
    display_name: z.string(),
    aliases: z.array(z.string()),
    cautions: z.array(z.string()),
    languages: z.array(z.string()),
    runtime_profile: z.string(),
    delivery_mode: z.string(),
    status: z.enum(["enabled", "disabled"]),
    is_default: z.boolean(),
    instructions_is_default: z.boolean(),
    created_at: z.iso.datetime(),
    avatar_url: z.string().nullable().optional(),
    description: z.string().nullable().optional(),
    instructions: z.string().nullable().optional(),
    model: z.string().nullable().optional(),
    tone: z.enum(["formal", "friendly", "direct", "casual"]).nullable().optional(),
    verbosity: z.enum(["concise", "balanced", "detailed"]).nullable().optional(),
  })
  .openapi("AgentRow");
export type AgentRow = z.infer<typeof AgentRowSchema>;

export const AgentListSchema = z.object({ agents: z.array(AgentRowSchema) }).openapi("AgentList");
