import { callerEvent } from "../http/audit";
import { routesOf } from "../http/endpoint";
import { jsonBody, jsonResponse } from "../http/route";
import { agentEvent, idErrors, params, TAGS } from "./route-parts";
import { AgentMcpServersSchema, AgentSkillsSchema } from "./schemas";
import { getSubset, putSubset } from "./subsets";

const route = routesOf(TAGS);

for (const kind of ["skills", "mcp_servers"] as const) {
  const path = kind === "skills" ? "/v1/agents/{id}/skills" : "/v1/agents/{id}/mcp";
  const noun = kind === "skills" ? "skills" : "MCP servers";
  const schema = kind === "skills" ? AgentSkillsSchema : AgentMcpServersSchema;
  const wrap = (list: string[]) => (kind === "skills" ? { skills: list } : { mcp_servers: list });

  route({ scope: "agents:read" }, `GET ${path}`, `The agent's enabled ${noun}`, {
    description: `An empty list means every ${noun.replace(/s$/, "")} installed for the workspace.`,
    request: params,
    responses: { 200: jsonResponse(schema, `Enabled ${noun}`), ...idErrors },
  }).handle(async (c) =>
    c.json(wrap(await getSubset(c.env, c.var.caller.workspace.id, c.req.valid("param").id, kind)), 200),
  );

  route("admin", `PUT ${path}`, `Replace the agent's enabled ${noun}`, {
    description:
      "Every slug must be installed for the workspace (400 otherwise). " +
      `An empty list resets to every installed ${noun.replace(/s$/, "")}. Duplicates are dropped.`,
    request: { ...params, body: jsonBody(schema) },
    responses: { 200: jsonResponse(schema, `The new subset`), ...idErrors },
  }).handle(async (c) => {
    const { id } = c.req.valid("param");
    const body = c.req.valid("json") as { skills?: string[]; mcp_servers?: string[] };
    const { after } = await putSubset(c.env, c.var.caller.workspace.id, id, kind, body[kind] ?? [], (change) =>
      callerEvent(
        c,
        agentEvent(
          kind === "skills" ? "agent.skills" : "agent.mcp",
          id,
          { [kind]: change.after, [`previous_${kind}`]: change.before },
          kind === "skills" ? "set_skills" : "set_mcp_servers",
        ),
      ),
    );
    return c.json(wrap(after), 200);
  });
}

/** An agent's enabled skills and MCP servers. */
export const subsetRouter = route.router;
