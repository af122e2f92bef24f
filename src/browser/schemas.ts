import { z } from "@hono/zod-openapi";

export const ASK_TIMEOUT = { default: 120_000, min: 1_000, max: 300_000 } as const;

export const AskRequestSchema = z
  .object({
    prompt: z.string().trim().min(1).max(20_000).openapi({ example: "What is the title of the page I have open?" }),
    agent_slug: z
      .string()
      .regex(/^[a-z0-9-]{2,32}$/, "agent_slug is 2-32 characters of a-z, 0-9 and -")
      .optional()
      .openapi({ description: "Slug or alias of the agent to run; the workspace default agent when omitted" }),
    timeout_ms: z
      .number()
      .int()
      .min(ASK_TIMEOUT.min)
      .max(ASK_TIMEOUT.max)
      .optional()
      .openapi({ description: `Overall deadline of the turn in milliseconds (default ${ASK_TIMEOUT.default})` }),
  })
  .strict()
  .openapi("BrowserAskRequest");
export type AskRequest = z.infer<typeof AskRequestSchema>;

export const AskReplySchema = z
  .object({
    reply: z.string().openapi({ description: "The agent's answer, or a plain account of why the turn ended early" }),
    steps: z
      .number()
      .int()
      .min(0)
      .openapi({ description: "Model steps the turn took (each step may run browser commands)" }),
  })
  .openapi("BrowserAskReply");
export type AskReply = z.infer<typeof AskReplySchema>;
