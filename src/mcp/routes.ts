import { onlyOneRemoved } from "../agents/subsets";
import { callerEvent } from "../http/audit";
import { byIdErrors, routesOf } from "../http/endpoint";
import { rateLimit } from "../http/rate-limit";
import { credentialField } from "../http/route";
import { mcpCatalogueRouter } from "./catalogue-routes";
import { createConnector, enroll, invalidEnrollmentToken, listConnectors, revokeConnector } from "./connectors";
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
} from "./schemas";

const route = routesOf(["MCP"]);

route("admin", "POST /v1/mcp/custom", "Add a custom MCP server", {
  description:
    "A Streamable HTTP MCP server of the workspace's own, offered to agents as `t:<slug>` (installed at once; agents enable it like a catalogue server). Header values are stored encrypted and sent only when the server is called; they are never returned. Only https URLs, and never a private or local host.",
  body: CreateCustomSchema,
  responses: {
    201: [CustomSchema, "The integration, without its header values"],
    400: "Invalid body (slug, https URL, header names)",
    409: "The workspace already has this slug (`integration_exists`)",
  },
}).handle(async (c) => {
  const custom = await createCustom(c.env, c.var.caller.workspace.id, c.req.valid("json"), (created) =>
    callerEvent(c, {
      kind: "mcp.custom.create",
      target: `mcp_server:${created.slug}`,
      details: { slug: created.slug, url: created.url, authenticated: created.header_names.length > 0 },
    }),
  );
  return c.json(custom, 201);
});

route("admin", "GET /v1/mcp/custom", "The workspace's custom MCP servers", {
  responses: { 200: [CustomListSchema, "The integrations, by slug"] },
}).handle(async (c) => c.json({ integrations: await listCustom(c.env, c.var.caller.workspace.id) }, 200));

route("admin", "DELETE /v1/mcp/custom/{slug}", "Delete a custom MCP server", {
  description:
    "Removes the integration, its stored credentials, its install and every agent's enablement of it, together. " +
    `${onlyOneRemoved("MCP server", "only_mcp_server_removed")} ` +
    "A platform server's slug is a 400 (`not_custom`).",
  params: CustomSlugParamSchema,
  responses: {
    204: "Deleted",
    400: "A platform server (`not_custom`) or a malformed slug",
    404: "No such custom integration in this workspace",
  },
}).handle(async (c) => {
  await deleteCustom(c.env, c.var.caller.workspace.id, c.req.valid("param").slug, (slug) =>
    callerEvent(c, { kind: "mcp.custom.delete", target: `mcp_server:${slug}`, details: { slug } }),
  );
  return c.body(null, 204);
});

// ---- Connectors: created by an admin, enrolled by the connector with its one-time token ----

route("admin", "POST /v1/mcp/connectors", "Create a connector and its enrollment token", {
  description: "The token is shown once and redeemable once within 15 minutes at `POST /v1/mcp/connectors/enroll`.",
  body: CreateConnectorSchema,
  responses: { 201: [CreatedConnectorSchema, "The pending connector and its token"], 400: "Invalid body" },
}).handle(async (c) => {
  const { name } = c.req.valid("json");
  const created = await createConnector(c.env, c.var.caller.workspace.id, name, (id) =>
    callerEvent(c, { kind: "mcp.connector.create", target: `mcp_connector:${id}`, details: { name } }),
  );
  return c.json(created, 201);
});

route("admin", "GET /v1/mcp/connectors", "The workspace's connectors", {
  responses: { 200: [ConnectorListSchema, "Newest first"] },
}).handle(async (c) => c.json({ connectors: await listConnectors(c.env, c.var.caller.workspace.id) }, 200));

route("admin", "DELETE /v1/mcp/connectors/{id}", "Revoke a connector", {
  description: "Idempotent. A pending connector's token can no longer be redeemed.",
  params: ConnectorIdParamSchema,
  responses: { 204: "Revoked", ...byIdErrors("connector") },
}).handle(async (c) => {
  const { id } = c.req.valid("param");
  const event = callerEvent(c, { kind: "mcp.connector.revoke", target: `mcp_connector:${id}`, details: {} });
  await revokeConnector(c.env, c.var.caller.workspace.id, id, event);
  return c.body(null, 204);
});

route(
  "public",
  "POST /v1/mcp/connectors/enroll",
  "Enroll a connector: redeem its one-time token for a client certificate",
  {
    description:
      "Authenticated by the one-time token alone. The CSR's self-signature must verify and its key be EC P-256/P-384 or RSA of 2048 bits or more. The certificate is signed by the workspace CA and ignores the CSR's subject: CN = the connector id, SAN URI `urn:svc:connector:<id>`, extended key usage clientAuth, valid 30 days.",
    body: EnrollRequestSchema,
    responses: {
      200: [EnrollmentResultSchema, "The certificate, the CA certificate and the tunnel to dial"],
      400: "A malformed body besides the token, or a CSR that does not parse, verify or has a weak key (`invalid_csr`)",
      403: "The token is missing, invalid, expired or already redeemed (`invalid_enrollment_token`)",
      429: "Rate limited",
      503: "Enrollment is not configured (`enrollment_not_configured`: no CA)",
    },
  },
  { middleware: [rateLimit("ENROLL_LIMITER")] },
).handle(
  async (c) => {
    const { result } = await enroll(c.env, c.req.valid("json"));
    return c.json(result, 200);
  },
  credentialField("token", invalidEnrollmentToken),
);

export const mcpRouter = route.router.route("/", mcpCatalogueRouter);
