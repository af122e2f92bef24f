import { auditEntry } from "../http/audit";
import { apiRoute, createRouter, jsonBody, jsonResponse } from "../http/route";
import { problemResponse } from "../platform/problem";
import { createCustom, deleteCustom, listCustom } from "./custom";
import { CreateCustomSchema, CustomListSchema, CustomSchema, CustomSlugParamSchema } from "./schemas";

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
