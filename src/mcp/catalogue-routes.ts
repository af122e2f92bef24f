import { CatalogueSlugParamSchema, McpServerCatalogueSchema, McpServerEntrySchema } from "../agents/schemas";
import { onlyOneRemoved } from "../agents/subsets";
import { callerEvent } from "../http/audit";
import { routesOf } from "../http/endpoint";
import { createRouter, jsonResponse } from "../http/route";
import { problemResponse } from "../platform/problem";
import { installMcpServer, listMcpServers, uninstallMcpServer } from "./catalogue";

/** The platform's MCP-server catalogue, with install and uninstall per workspace. */
export const mcpCatalogueRouter = createRouter();
const route = routesOf(mcpCatalogueRouter, ["Skills and MCP servers"]);

const slugParams = { params: CatalogueSlugParamSchema };

route(
  { scope: "agents:read" },
  "GET /v1/api/mcp/servers",
  "The MCP-server catalogue, with what this workspace installed",
  {
    description: "Ordered by slug. Nothing is installed in a new workspace.",
    responses: { 200: jsonResponse(McpServerCatalogueSchema, "The catalogue") },
  },
).handle(async (c) => c.json({ mcp_servers: await listMcpServers(c.env, c.var.caller.workspace.id) }, 200));
route("admin", "PUT /v1/api/mcp/servers/{slug}", "Install an MCP server for the workspace", {
  description: "Idempotent. No request body.",
  request: slugParams,
  responses: {
    400: problemResponse("`validation_failed`: a slug longer than 100 characters"),
    200: jsonResponse(McpServerEntrySchema, "The installed server"),
    404: problemResponse("No such MCP server in the catalogue"),
  },
}).handle(async (c) => {
  const { slug } = c.req.valid("param");
  const { entry } = await installMcpServer(
    c.env,
    c.var.caller.workspace.id,
    slug,
    callerEvent(c, { kind: "mcp.install", target: `mcp_server:${slug}`, details: { slug } }),
  );
  return c.json(entry, 200);
});
route("admin", "DELETE /v1/api/mcp/servers/{slug}", "Uninstall an MCP server from the workspace", {
  description:
    "Idempotent. The server is removed from every agent's enabled subset in the same transaction. " +
    onlyOneRemoved("MCP server", "only_mcp_server_removed"),
  request: slugParams,
  responses: {
    400: problemResponse("`validation_failed`: a slug longer than 100 characters"),
    200: jsonResponse(McpServerEntrySchema, "The uninstalled server"),
    404: problemResponse("No such MCP server in the catalogue"),
  },
}).handle(async (c) => {
  const { slug } = c.req.valid("param");
  const { entry } = await uninstallMcpServer(
    c.env,
    c.var.caller.workspace.id,
    slug,
    callerEvent(c, { kind: "mcp.uninstall", target: `mcp_server:${slug}`, details: { slug } }),
  );
  return c.json(entry, 200);
});
