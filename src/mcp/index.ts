import type { Area } from "../http/area";

/** MCP: custom servers of the workspace, and every enabled server's tools in an agent's turn. */
export const mcpArea: Area = {
  name: "mcp",
  routes: {
    paths: ["/v1/mcp/custom", "/v1/mcp/connectors", "/v1/api/mcp"],
    load: async () => (await import("./routes")).mcpRouter,
  },
  tools: async (scope) => (await import("./client")).mcpTools(scope),
};
