import type { Area } from "../http/area";
import { mcpTools } from "./client";
import { mcpRouter } from "./routes";

/** MCP: custom servers of the workspace, and every enabled server's tools in an agent's turn. */
export const mcpArea: Area = {
  name: "mcp",
  router: mcpRouter,
  tools: mcpTools,
};
