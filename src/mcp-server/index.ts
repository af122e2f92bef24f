import type { Area } from "../http/area";

/** The service as an MCP server (`POST /v1/mcp`); it stores nothing of its own, so no erase step. */
export const mcpServerArea: Area = {
  name: "mcp-server",
  routes: {
    paths: ["/v1/mcp", "/.well-known/oauth-protected-resource/v1/mcp"],
    load: async () => (await import("./routes")).mcpServerRouter,
  },
};
