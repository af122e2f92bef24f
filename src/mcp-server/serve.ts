import {
  createMcpHandler,
  isLegacyRequest,
  legacyStatelessFallback,
  WebStandardStreamableHTTPServerTransport,
} from "@modelcontextprotocol/server";
import type { ToolContext } from "./context";
import { isToolName } from "./scopes";
import { mcpServerFor } from "./tools";

/**
 * One POST of `/v1/mcp` (its caller authenticated, its tool scopes checked), served by the MCP
 * SDK in the era its client speaks, from the same tools:
 *
 * - 2026-07-28 (the request carries its version in `_meta`): the SDK's stateless handler, which
 *   checks the envelope and the `Mcp-Method`/`Mcp-Name` headers against the body, answers an
 *   unsupported version with -32022 and the versions it supports, an unknown method with 404,
 *   and serves `server/discover` and `subscriptions/listen`;
 * - 2025-11-25 and older (`initialize`, no envelope): a fresh server on the stateless transport,
 *   answering one JSON object, or an SSE stream when the request asks for progress.
 *
 * `body` is the parsed JSON body (undefined when it is not JSON: the transport refuses it).
 */
export async function serveMcp(
  request: Request,
  body: unknown,
  ctx: ToolContext,
  waitUntil: (promise: Promise<unknown>) => void,
): Promise<Response> {
  const factory = () => mcpServerFor(ctx);
  const parsed = body === undefined ? undefined : { parsedBody: body };
  if (await isLegacyRequest(request, body)) {
    const unknown = unknownToolCall(body);
    if (unknown) return unknown;
    if (wantsProgress(body)) return legacyStatelessFallback(factory)(request, parsed);
    const server = factory();
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await server.connect(transport);
    try {
      return await transport.handleRequest(request, parsed);
    } finally {
      waitUntil(server.close());
    }
  }
  return createMcpHandler(factory, { legacy: "reject" }).fetch(request, parsed);
}

/** A request with a progress token: its notifications need the SSE answer. */
const wantsProgress = (body: unknown) =>
  (body as { params?: { _meta?: { progressToken?: unknown } } } | null)?.params?._meta?.progressToken !== undefined;

/**
 * A 2025-era `tools/call` of a tool this server does not have: a tool error (`isError`), the
 * answer these clients always had from this server (the 1.x SDK's); 2026-07-28 clients get the
 * protocol error -32602 their revision specifies.
 */
function unknownToolCall(body: unknown): Response | null {
  const { method, id, params } = (body ?? {}) as { method?: unknown; id?: unknown; params?: { name?: unknown } };
  if (method !== "tools/call" || (typeof id !== "string" && typeof id !== "number")) return null;
  const name = params?.name;
  if (typeof name !== "string" || isToolName(name)) return null;
  return Response.json({
    jsonrpc: "2.0",
    id,
    result: { content: [{ type: "text", text: `MCP error -32602: Tool ${name} not found` }], isError: true },
  });
}
