import type { Area } from "../http/area";
import { mcpServerRouter } from "./routes";

/** The service as an MCP server (`POST /v1/mcp`); it stores nothing of its own, so no erase step. */
export const mcpServerArea: Area = {
  name: "mcp-server",
  router: mcpServerRouter,
};
