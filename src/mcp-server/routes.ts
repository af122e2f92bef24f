import type { Context, MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import { MCP_PATH, mcpResource, resourceMetadataUrl } from "../auth/resources";
import type { AppEnv } from "../http/context";
import { routesOf } from "../http/endpoint";
import { authenticateBearer, type ResourceRef } from "../http/guards";
import { BEARER, contractRoute, createRouter, ownBody } from "../http/route";
import { ProtectedResourceMetadataSchema } from "../oauth/schemas";
import { baseUrl } from "../platform/env";
import { ApiError, problemResponse } from "../platform/problem";
import { toolContext } from "./context";
import { McpMessageSchema, McpResponseSchema } from "./schemas";
import { INSUFFICIENT_SCOPE_CODE, isToolName, MCP_SCOPES, TOOL_SCOPES } from "./scopes";

/**
 * The service as an MCP server: `POST /v1/mcp`, Streamable HTTP without sessions (every
 * request stands alone), for clients of MCP 2026-07-28 and of 2025-11-25 and older alike
 * (see serve.ts). A resource of its own for OAuth (RFC 8707, RFC 9728): its metadata is
 * `/.well-known/oauth-protected-resource/v1/mcp`, and its 401s point there. The SDK is loaded
 * only when this endpoint is called.
 */
export const mcpServerRouter = createRouter();

const TAGS = ["MCP server"];
const route = routesOf(TAGS, mcpServerRouter);
const MCP: ResourceRef = { of: mcpResource, challengeScopes: MCP_SCOPES };
const metadataUrl = (base: string) => resourceMetadataUrl(base, mcpResource(base));

/**
 * DNS-rebinding rule of the Streamable HTTP transport: a request whose `Origin` is not the
 * service's own origin is refused, whatever credential it carries. Clients outside a browser
 * send no `Origin`.
 */
const sameOriginOnly: MiddlewareHandler<AppEnv> = async (c, next) => {
  const origin = c.req.header("Origin");
  if (origin !== undefined && origin !== new URL(baseUrl(c.env, c.req.url)).origin) {
    throw new ApiError(403, "forbidden_origin", "Requests from another origin are not accepted by the MCP endpoint");
  }
  await next();
};

const GUARDS: MiddlewareHandler<AppEnv>[] = [sameOriginOnly, authenticateBearer(MCP)];

const messageBody = ownBody(mcpServerRouter, "McpMessage", McpMessageSchema, {
  mediaTypes: ["application/json"],
  invalid: () => new ApiError(400, "invalid_request", "Not a JSON-RPC message"),
});

/**
 * The first `tools/call` of the body whose tool needs a scope the caller lacks: refused with
 * 403 and an `insufficient_scope` challenge naming that scope (MCP authorization, "Scope
 * challenge handling"), so a client can step up its authorization.
 */
function scopeRefusal(c: Context<AppEnv>, body: unknown): Response | null {
  for (const message of Array.isArray(body) ? body : [body]) {
    if (typeof message !== "object" || message === null) continue;
    const { method, params, id } = message as { method?: unknown; params?: { name?: unknown }; id?: unknown };
    if (method !== "tools/call" || typeof params !== "object" || params === null || !isToolName(params.name)) continue;
    const scope = TOOL_SCOPES[params.name];
    if (c.var.caller.scopes.has(scope)) continue;
    const detail = `The tool ${params.name} needs the scope ${scope}`;
    return Response.json(
      {
        jsonrpc: "2.0",
        id: typeof id === "string" || typeof id === "number" ? id : null,
        error: { code: INSUFFICIENT_SCOPE_CODE, message: detail, data: { error: "insufficient_scope", scope } },
      },
      {
        status: 403,
        headers: {
          "WWW-Authenticate": `Bearer error="insufficient_scope", scope="${scope}", resource_metadata="${metadataUrl(
            baseUrl(c.env, c.req.url),
          )}", error_description="${detail}"`,
        },
      },
    );
  }
  return null;
}

const jsonRpc = (description: string) => ({
  description,
  content: { "application/json": { schema: McpResponseSchema } },
});

mcpServerRouter.openapi(
  contractRoute({
    method: "post",
    path: MCP_PATH,
    tags: TAGS,
    summary: "MCP endpoint (Streamable HTTP, stateless)",
    description:
      "The Model Context Protocol over Streamable HTTP, without sessions, for clients of both eras. MCP 2026-07-28: " +
      "every request carries its version and capabilities in `_meta` and the `MCP-Protocol-Version`, `Mcp-Method` " +
      "(and `Mcp-Name`) headers, which must match the body (else 400, JSON-RPC -32020); `server/discover` names the " +
      "supported versions, an unsupported one is 400 with -32022 listing them, an unknown method (`initialize`, " +
      "`ping`) is 404 with -32601, `subscriptions/listen` is an SSE stream acknowledged first, and results carry " +
      "`resultType`, the server's identity in `_meta` and, on `tools/list`, `ttlMs` with `cacheScope: private`. " +
      "2025-11-25 and older: one JSON-RPC message (or a batch) per POST, answered with one JSON object; `initialize` " +
      "negotiates the version, `ping` answers `{}`, a notification gets 202. A `tools/call` with a progress token is " +
      "answered with an SSE stream carrying its progress. Tools: `list_agents` (agents:read), " +
      "`ask_agent { prompt, agent_slug? }` (conversations:write; a fast turn, paid from the credits), `list_artifacts` " +
      "(conversations:read). For OAuth access tokens and personal access tokens (no session cookie). The 401 challenge " +
      "names this resource's metadata, `/.well-known/oauth-protected-resource/v1/mcp`; an OAuth token bound (RFC 8707) " +
      "to another resource is refused. A `tools/call` without the tool's scope is 403 with an `insufficient_scope` " +
      "challenge (JSON-RPC error code 403). A request with an `Origin` other than the service's own is 403 " +
      "(DNS-rebinding protection).",
    security: [{ [BEARER]: [] }],
    middleware: GUARDS,
    request: { body: messageBody.doc },
    responses: {
      200: {
        description:
          "The JSON-RPC response (a tool's failure is a result with `isError`); an SSE stream for `subscriptions/listen` " +
          "and for a call that reports progress",
        content: {
          "application/json": { schema: McpResponseSchema },
          "text/event-stream": { schema: { type: "string", description: "JSON-RPC messages as SSE events" } },
        },
      },
      202: { description: "A notification (or response) was accepted; no body" },
      400: jsonRpc(
        "Not JSON, not a JSON-RPC message, an unsupported protocol version (-32022 with `data.supported`), " +
          "headers that do not match the body (-32020), or a 2026-07-28 request without its `_meta` (-32602)",
      ),
      401: problemResponse("No token, or an unknown, expired, revoked or other-resource token"),
      403: {
        description:
          '`forbidden_origin` (a problem) for a foreign Origin; for a tool without its scope, a JSON-RPC error with `WWW-Authenticate: Bearer error="insufficient_scope"`',
        content: {
          "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } },
          "application/json": { schema: McpResponseSchema },
        },
      },
      404: jsonRpc("MCP 2026-07-28: a method this server does not implement (-32601)"),
      406: jsonRpc("The Accept header lists neither both application/json and text/event-stream"),
      415: jsonRpc("The body is not application/json"),
    },
  }),
  async (c) => {
    const text = await c.req.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const refused = scopeRefusal(c, body);
    if (refused) return refused as never;
    const { serveMcp } = await import("./serve");
    // The body was read above; the SDK gets it again (parsed, or as text to refuse it in its own words).
    const request = new Request(c.req.url, {
      method: "POST",
      headers: c.req.raw.headers,
      body: text,
      signal: c.req.raw.signal,
    });
    return (await serveMcp(request, body, toolContext(c), (p) => c.executionCtx.waitUntil(p))) as never;
  },
);

// No standalone SSE stream (GET) and no sessions to end (DELETE): 405, as the transport says.
for (const method of ["GET", "DELETE"] as const) {
  const summary = method === "GET" ? "No server-initiated stream" : "No sessions to end";
  route("public", `${method} ${MCP_PATH}`, summary, {
    description: "This MCP server is stateless and answers POSTs only.",
    responses: { 405: "`method_not_allowed` (with `Allow: POST`)" },
  }).handle(() => {
    throw new ApiError(405, "method_not_allowed", "The MCP endpoint takes POST only", undefined, { Allow: "POST" });
  });
}

mcpServerRouter.use(
  `/.well-known/oauth-protected-resource${MCP_PATH}`,
  cors({ origin: "*", allowMethods: ["GET", "OPTIONS"], maxAge: 86_400 }),
);

route(
  "public",
  `GET /.well-known/oauth-protected-resource${MCP_PATH}`,
  "Protected resource metadata of the MCP server (RFC 9728)",
  {
    description:
      "The MCP endpoint's 401s point here. Its `resource` is what an MCP client sends as `resource` (RFC 8707) when it " +
      "authorizes; `scopes_supported` are the scopes its tools need.",
    responses: { 200: [ProtectedResourceMetadataSchema, "The metadata"] },
  },
).handle((c) => {
  const base = baseUrl(c.env, c.req.url);
  return c.json(
    {
      resource: mcpResource(base),
      authorization_servers: [base],
      scopes_supported: MCP_SCOPES,
      bearer_methods_supported: ["header"],
      resource_name: "Workspace Agent Service MCP server",
      resource_documentation: `${base}/v1/docs`,
    },
    200,
    { "Cache-Control": "public, max-age=3600" },
  );
});
