import { McpServerCatalogueSchema, McpServerEntrySchema } from "../agents/schemas";
import { onlyOneRemoved } from "../agents/subsets";
import { catalogueRoutes } from "../http/catalogue";
import { createRouter } from "../http/route";
import { mcpServerCatalogue } from "./catalogue";

/** The platform's MCP-server catalogue, with install and uninstall per workspace. */
export const mcpCatalogueRouter = createRouter();

catalogueRoutes(mcpCatalogueRouter, mcpServerCatalogue, {
  names: { path: "/v1/api/mcp/servers", key: "mcp_servers", noun: ["MCP server", "an MCP server"] },
  schemas: { list: McpServerCatalogueSchema, entry: McpServerEntrySchema },
  summary: "The MCP-server catalogue, with what this workspace installed",
  description: "Ordered by slug. Nothing is installed in a new workspace.",
  uninstalled: onlyOneRemoved("MCP server", "only_mcp_server_removed"),
  event: (change, slug) => ({ kind: `mcp.${change}`, target: `mcp_server:${slug}`, details: { slug } }),
});
