import { z } from "@hono/zod-openapi";

/** One JSON-RPC 2.0 message as MCP clients send it (documentation; the MCP SDK's transport judges the body). */
export const McpMessageSchema = z
  .object({
    jsonrpc: z.literal("2.0"),
    id: z
      .union([z.string().max(200), z.number().int()])
      .optional()
      .openapi({ description: "Present on requests, absent on notifications" }),
    method: z.string().max(200).openapi({ example: "tools/call" }),
    params: z.record(z.string(), z.unknown()).optional(),
  })
  .openapi("McpMessage", {
    description:
      "A JSON-RPC request or notification of the Model Context Protocol: `server/discover`, `tools/list`, `tools/call`, `subscriptions/listen` (2026-07-28, with `_meta` in `params`); `initialize`, `ping`, `notifications/initialized` (2025-11-25 and older), …",
  });

export const McpResponseSchema = z
  .object({
    jsonrpc: z.literal("2.0"),
    id: z.union([z.string(), z.number(), z.null()]),
    result: z.record(z.string(), z.unknown()).optional(),
    error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }).optional(),
  })
  .openapi("McpResponse", { description: "A JSON-RPC response: `result`, or `error`" });
