import { apiRoute, createRouter, jsonResponse } from "../platform/openapi";
import { AgentListSchema } from "./schemas";
import { listAgents } from "./service";

export const agentsRouter = createRouter();

agentsRouter.openapi(
  apiRoute(
    { scope: "agents:read" },
    {
      method: "get",
      path: "/v1/agents",
      tags: ["Agents"],
      summary: "List the workspace's agents",
      description: "Default agent first, then enabled agents, then by slug.",
      responses: { 200: jsonResponse(AgentListSchema, "The agents") },
    },
  ),
  async (c) => c.json({ agents: await listAgents(c.env, c.var.caller.workspace.id) }, 200),
);
