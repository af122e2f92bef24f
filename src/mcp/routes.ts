import type { Context } from "hono";
import { bearerToken, resolveBearer } from "../auth/resolve";
import { GRANTABLE_SCOPES } from "../auth/scopes";
import { auditEntry, deliverAfterResponse } from "../http/audit";
import type { AppEnv } from "../http/context";
import { setCaller } from "../http/guards";
import { rateLimit } from "../http/rate-limit";
import { apiRoute, createRouter, jsonBody, jsonResponse, limitBody } from "../http/route";
import { baseUrl } from "../platform/env";
import { ApiError, problemResponse } from "../platform/problem";
import { createConnector, enroll, listConnectors, revokeConnector } from "./connectors";
import { createCustom, deleteCustom, listCustom } from "./custom";
import {
  ConnectorIdParamSchema,
  ConnectorListSchema,
  CreateConnectorSchema,
  CreateCustomSchema,
  CreatedConnectorSchema,
  CustomListSchema,
  CustomSchema,
  CustomSlugParamSchema,
  EnrollmentResultSchema,
  EnrollRequestSchema,
  McpResourceMetadataSchema,
} from "./schemas";
import { handleMcp, MCP_TOOL_SCOPES, scopeNeeded } from "./server";

export const mcpRouter = createRouter();

const TAGS = ["MCP"];

mcpRouter.openapi(
  apiRoute("admin", {
    method: "post",
    path: "/v1/mcp/custom",
    tags: TAGS,
    summary: "Add a custom MCP server",
    description:
      "A Streamable HTTP MCP server of the workspace's own, offered to agents as `t:<slug>` (installed at once; agents " +
      "enable it like a catalogue server). Header values are stored encrypted and sent only when the server is called; " +
      "they are never returned. Only https URLs, and never a private or local host.",
    request: { body: jsonBody(CreateCustomSchema) },
    responses: {
      201: jsonResponse(CustomSchema, "The integration, without its header values"),
      400: problemResponse("Invalid body (slug, https URL, header names)"),
      409: problemResponse("The workspace already has this slug (`integration_exists`)"),
    },
  }),
  async (c) => {
    const custom = await createCustom(c.env, c.var.caller.workspace.id, c.req.valid("json"), (created) =>
      auditEntry(c, {
        kind: "mcp.custom.create",
        target: `mcp_server:${created.slug}`,
        details: { slug: created.slug, url: created.url, authenticated: created.header_names.length > 0 },
      }),
    );
    return c.json(custom, 201);
  },
);

mcpRouter.openapi(
  apiRoute("admin", {
    method: "get",
    path: "/v1/mcp/custom",
    tags: TAGS,
    summary: "The workspace's custom MCP servers",
    responses: { 200: jsonResponse(CustomListSchema, "The integrations, by slug") },
  }),
  async (c) => c.json({ integrations: await listCustom(c.env, c.var.caller.workspace.id) }, 200),
);

mcpRouter.openapi(
  apiRoute("admin", {
    method: "delete",
    path: "/v1/mcp/custom/{slug}",
    tags: TAGS,
    summary: "Delete a custom MCP server",
    description:
      "Removes the integration, its stored credentials, its install and every agent's enablement of it, together. " +
      "A platform server's slug is a 400 (`not_custom`).",
    request: { params: CustomSlugParamSchema },
    responses: {
      204: { description: "Deleted" },
      400: problemResponse("A platform server (`not_custom`) or a malformed slug"),
      404: problemResponse("No such custom integration in this workspace"),
    },
  }),
  async (c) => {
    await deleteCustom(c.env, c.var.caller.workspace.id, c.req.valid("param").slug, (slug) =>
      auditEntry(c, { kind: "mcp.custom.delete", target: `mcp_server:${slug}`, details: { slug } }),
    );
    return c.body(null, 204);
  },
);

// ---- Connectors: created by an admin, enrolled by the connector with its one-time token ----

mcpRouter.openapi(
  apiRoute("admin", {
    method: "post",
    path: "/v1/mcp/connectors",
    tags: TAGS,
    summary: "Create a connector and its enrollment token",
    description: "The token is shown once and redeemable once within 15 minutes at `POST /v1/mcp/connectors/enroll`.",
    request: { body: jsonBody(CreateConnectorSchema) },
    responses: {
      201: jsonResponse(CreatedConnectorSchema, "The pending connector and its token"),
      400: problemResponse("Invalid body"),
    },
  }),
  async (c) => {
    const { name } = c.req.valid("json");
    const created = await createConnector(c.env, c.var.caller.workspace.id, name, (id) =>
      auditEntry(c, { kind: "mcp.connector.create", target: `mcp_connector:${id}`, details: { name } }),
    );
    return c.json(created, 201);
  },
);

mcpRouter.openapi(
  apiRoute("admin", {
    method: "get",
    path: "/v1/mcp/connectors",
    tags: TAGS,
    summary: "The workspace's connectors",
    responses: { 200: jsonResponse(ConnectorListSchema, "Newest first") },
  }),
  async (c) => c.json({ connectors: await listConnectors(c.env, c.var.caller.workspace.id) }, 200),
);

mcpRouter.openapi(
  apiRoute("admin", {
    method: "delete",
    path: "/v1/mcp/connectors/{id}",
    tags: TAGS,
    summary: "Revoke a connector",
    description: "Idempotent. A pending connector's token can no longer be redeemed.",
    request: { params: ConnectorIdParamSchema },
    responses: {
      204: { description: "Revoked" },
      400: problemResponse("Malformed id"),
      404: problemResponse("No such connector in this workspace"),
    },
  }),
  async (c) => {
    const { id } = c.req.valid("param");
    await revokeConnector(
      c.env,
      c.var.caller.workspace.id,
      id,
      auditEntry(c, { kind: "mcp.connector.revoke", target: `mcp_connector:${id}`, details: {} }),
    );
    return c.body(null, 204);
  },
);

mcpRouter.openapi(
  apiRoute(
    "public",
    {
      method: "post",
      path: "/v1/mcp/connectors/enroll",
      tags: TAGS,
      summary: "Enroll a connector: redeem its one-time token for a client certificate",
      description:
        "Authenticated by the one-time token alone. The CSR's self-signature must verify and its key be EC P-256/P-384 " +
        "or RSA of 2048 bits or more. The certificate is signed by the workspace CA and ignores the CSR's subject: " +
        "CN = the connector id, SAN URI `urn:svc:connector:<id>`, extended key usage clientAuth, valid 30 days.",
      request: { body: jsonBody(EnrollRequestSchema) },
      responses: {
        200: jsonResponse(EnrollmentResultSchema, "The certificate, the CA certificate and the tunnel to dial"),
        400: problemResponse(
          "A malformed body, or a CSR that does not parse, verify or has a weak key (`invalid_csr`)",
        ),
        403: problemResponse("The token is missing, invalid, expired or already redeemed (`invalid_enrollment_token`)"),
        429: problemResponse("Rate limited"),
        503: problemResponse("Enrollment is not configured (`enrollment_not_configured`: no CA)"),
      },
    },
    [rateLimit("ENROLL_LIMITER")],
  ),
  async (c) => {
    const { workspaceId, result } = await enroll(c.env, c.req.valid("json"));
    deliverAfterResponse(c, workspaceId); // its event was written with the redemption
    return c.json(result, 200);
  },
);

// ---- The service as an MCP server: POST /v1/mcp (Streamable HTTP, stateless) ----

const MCP_PATH = "/v1/mcp";
const resourceMetadataUrl = (c: Context<AppEnv>) =>
  `${baseUrl(c.env, c.req.url)}/.well-known/oauth-protected-resource${MCP_PATH}`;

mcpRouter.openapi(
  apiRoute("public", {
    method: "get",
    path: `/.well-known/oauth-protected-resource${MCP_PATH}`,
    tags: TAGS,
    summary: "Protected resource metadata of the MCP endpoint (RFC 9728)",
    description: "What MCP clients read to find the authorization server and the scopes of `POST /v1/mcp`.",
    responses: { 200: jsonResponse(McpResourceMetadataSchema, "The metadata") },
  }),
  (c) => {
    const base = baseUrl(c.env, c.req.url);
    return c.json(
      {
        resource: `${base}${MCP_PATH}`,
        authorization_servers: [base],
        scopes_supported: [...new Set(Object.values(MCP_TOOL_SCOPES))].filter((s) => GRANTABLE_SCOPES.includes(s)),
        bearer_methods_supported: ["header"],
        resource_name: "Workspace Agent Service MCP server",
      },
      200,
      { "Cache-Control": "public, max-age=3600" },
    );
  },
);

/** 401 with the challenge MCP clients follow to the metadata above. */
function challenge(c: Context<AppEnv>, detail: string, tokenPresented: boolean): ApiError {
  const metadata = `resource_metadata="${resourceMetadataUrl(c)}"`;
  return new ApiError(401, tokenPresented ? "invalid_token" : "unauthenticated", detail, undefined, {
    "WWW-Authenticate": tokenPresented ? `Bearer error="invalid_token", ${metadata}` : `Bearer ${metadata}`,
  });
}

/**
 * JSON-RPC over Streamable HTTP for OAuth access tokens and PATs (a bearer token only: never a
 * cookie). A foreign `Origin` is refused even with a valid token (DNS rebinding); a `tools/call`
 * needs the tool's scope, else 403 with an `insufficient_scope` challenge naming it.
 */
mcpRouter.post(MCP_PATH, limitBody(), async (c) => {
  const origin = c.req.header("Origin");
  if (origin && origin !== new URL(baseUrl(c.env, c.req.url)).origin)
    throw new ApiError(403, "origin_not_allowed", "Requests from other origins are not accepted here");
  const token = bearerToken(c.req.header("Authorization") ?? "");
  if (!token) throw challenge(c, "A bearer token is required", c.req.header("Authorization") !== undefined);
  const resolved = await resolveBearer(c.env, c.var.areas.bearerKinds, token);
  if (!resolved) throw challenge(c, "The access token is malformed, unknown, expired or revoked", true);
  setCaller(c, resolved);

  const raw = await c.req.text();
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(raw);
  } catch {
    // the transport answers malformed JSON-RPC itself
  }
  for (const message of Array.isArray(parsed) ? parsed : [parsed]) {
    const needed = scopeNeeded(message);
    if (needed && !c.var.caller.scopes.has(needed))
      throw new ApiError(403, "insufficient_scope", `This tool needs the ${needed} scope`, undefined, {
        "WWW-Authenticate": `Bearer error="insufficient_scope", scope="${needed}", resource_metadata="${resourceMetadataUrl(c)}"`,
      });
  }
  return handleMcp(c, new Request(c.req.raw.url, { method: "POST", headers: c.req.raw.headers, body: raw }));
});

mcpRouter.on(["GET", "DELETE"], MCP_PATH, (c) =>
  c.json(
    { jsonrpc: "2.0", error: { code: -32000, message: "Method not allowed: this server is stateless" }, id: null },
    405,
    {
      Allow: "POST",
    },
  ),
);
