import { callerEvent } from "../http/audit";
import { apiRoute, createRouter, jsonBody, jsonResponse } from "../http/route";
import { avatarEditRouter } from "./avatar-edit-routes";
import { avatarRouter } from "./avatar-routes";
import { monogramAvatar, storeAvatar } from "./avatars";
import { DEFAULT_RUNTIME_PROFILE } from "./defaults";
import { createAgent, updateAgent } from "./edits";
import { agentEvent, agentResponse, idErrors, origin, params, TAGS } from "./route-parts";
import {
  AgentListSchema,
  AgentRequestProblemSchema,
  CreateAgentRequestSchema,
  UpdateAgentRequestSchema,
} from "./schemas";
import { getAgentRecord, listAgents, toAgentRow } from "./service";
import { disableAgent, enableAgent, makeDefault } from "./status";
import { subsetRouter } from "./subset-routes";
import { suggestRouter } from "./suggest-routes";

export const agentsRouter = createRouter();

const PINNED_MODEL_DOC =
  "With an OpenAI-compatible provider configured (`LLM_BASE_URL`), a pinned `model` it does not list at " +
  "`GET {LLM_BASE_URL}/models` is refused with 400 `unknown_model`, whose `available_models` lists the ids it does " +
  "offer (the list is kept up to 5 minutes). When the provider answers no list (404, 501, a network error) or the " +
  "model runs on the Workers AI binding, the model is accepted and kept as given: the provider cannot tell, and a " +
  "refusal at a turn is a 502 `model_error` carrying the provider's message.";
const agentProblem = (description: string) => ({
  description,
  content: { "application/problem+json": { schema: AgentRequestProblemSchema } },
});

agentsRouter.openapi(
  apiRoute(
    { scope: "agents:read" },
    {
      method: "get",
      path: "/v1/agents",
      tags: TAGS,
      summary: "List the workspace's agents",
      description: "Default agent first, then enabled agents, then by slug.",
      responses: { 200: jsonResponse(AgentListSchema, "The agents") },
    },
  ),
  async (c) => c.json({ agents: await listAgents(c.env, c.var.caller.workspace.id) }, 200),
);

agentsRouter.openapi(
  apiRoute("admin", {
    method: "post",
    path: "/v1/agents",
    tags: TAGS,
    summary: "Create an agent",
    description:
      "Creates an enabled, non-default agent. Without `avatar_url`, an SVG monogram in a colour derived from the slug is generated and stored. " +
      "`skills` and `mcp_servers` must name installed entries. A slug or alias already used by any agent of the workspace is a 400 (`handle_taken`). " +
      PINNED_MODEL_DOC,
    request: { body: jsonBody(CreateAgentRequestSchema) },
    responses: {
      200: agentResponse("The created agent"),
      400: agentProblem(
        "Invalid slug (`invalid_slug`), alias (`invalid_alias`), a taken handle (`handle_taken`), a " +
          "model outside the runtime profile (`invalid_model`) or not offered by the provider (`unknown_model`, " +
          "with `available_models`), a skill or MCP server not installed, or another bad field",
      ),
    },
  }),
  async (c) => {
    const body = c.req.valid("json");
    const workspaceId = c.var.caller.workspace.id;
    const agent = await createAgent(
      c.env,
      workspaceId,
      body,
      async () => {
        const { url } = await storeAvatar(c.env, origin(c), workspaceId, monogramAvatar(body.slug, body.display_name));
        return url;
      },
      (id) =>
        callerEvent(
          c,
          agentEvent("agent.create", id, {
            slug: body.slug,
            display_name: body.display_name,
            aliases: body.aliases ?? [],
            runtime_profile: body.runtime_profile ?? DEFAULT_RUNTIME_PROFILE,
            model: body.model ?? null,
            avatar: body.avatar_url ? "url" : "monogram",
          }),
        ),
    );
    return c.json(agent, 200);
  },
);

agentsRouter.openapi(
  apiRoute(
    { scope: "agents:read" },
    {
      method: "get",
      path: "/v1/agents/{id}",
      tags: TAGS,
      summary: "One agent",
      request: params,
      responses: { 200: agentResponse("The agent"), ...idErrors },
    },
  ),
  async (c) => c.json(toAgentRow(await getAgentRecord(c.env, c.var.caller.workspace.id, c.req.valid("param").id)), 200),
);

agentsRouter.openapi(
  apiRoute("admin", {
    method: "patch",
    path: "/v1/agents/{id}",
    tags: TAGS,
    summary: "Update an agent",
    description:
      "Only the fields sent change; an explicit null clears a nullable field. Renaming the slug keeps the old slug as an alias. " +
      "Writing `instructions` (even null) makes `instructions_is_default` false. Validation is the same as creation; " +
      "the provider's model list is consulted only when the request sets `model`. " +
      PINNED_MODEL_DOC,
    request: { ...params, body: jsonBody(UpdateAgentRequestSchema) },
    responses: {
      200: agentResponse("The updated agent"),
      ...idErrors,
      400: agentProblem("Malformed agent id or invalid request (as creation, `unknown_model` included)"),
    },
  }),
  async (c) => {
    const { id } = c.req.valid("param");
    const { after } = await updateAgent(c.env, c.var.caller.workspace.id, id, c.req.valid("json"), (change) =>
      callerEvent(
        c,
        agentEvent("agent.update", id, {
          fields: change.changed,
          slug: change.after.slug,
          previous_slug: change.before.slug !== change.after.slug ? change.before.slug : undefined,
        }),
      ),
    );
    return c.json(after, 200);
  },
);

agentsRouter.openapi(
  apiRoute("admin", {
    method: "delete",
    path: "/v1/agents/{id}",
    tags: TAGS,
    summary: "Disable an agent",
    description:
      "The agent stops routing on every surface. Idempotent. The default agent cannot be disabled (400 `default_agent`).",
    request: params,
    responses: { 200: agentResponse("The disabled agent"), ...idErrors },
  }),
  async (c) => {
    const { id } = c.req.valid("param");
    const { agent } = await disableAgent(c.env, c.var.caller.workspace.id, id, (details) =>
      callerEvent(c, agentEvent("agent.disable", id, details)),
    );
    return c.json(agent, 200);
  },
);

agentsRouter.openapi(
  apiRoute("admin", {
    method: "post",
    path: "/v1/agents/{id}/enable",
    tags: TAGS,
    summary: "Enable an agent",
    description: "Routing is restored on every surface. Idempotent.",
    request: params,
    responses: { 200: agentResponse("The enabled agent"), ...idErrors },
  }),
  async (c) => {
    const { id } = c.req.valid("param");
    const { agent } = await enableAgent(c.env, c.var.caller.workspace.id, id, (details) =>
      callerEvent(c, agentEvent("agent.enable", id, details)),
    );
    return c.json(agent, 200);
  },
);

agentsRouter.openapi(
  apiRoute("admin", {
    method: "post",
    path: "/v1/agents/{id}/default",
    tags: TAGS,
    summary: "Make an agent the workspace default",
    description:
      "The flag moves atomically from the previous default; exactly one agent holds it. A disabled agent is a 400 (`agent_disabled`).",
    request: params,
    responses: { 200: agentResponse("The now-default agent"), ...idErrors },
  }),
  async (c) => {
    const { id } = c.req.valid("param");
    const { agent } = await makeDefault(c.env, c.var.caller.workspace.id, id, (slug) =>
      callerEvent(c, agentEvent("agent.default", id, { slug }, "make_default")),
    );
    return c.json(agent, 200);
  },
);

agentsRouter.route("/", avatarEditRouter);
agentsRouter.route("/", subsetRouter);
agentsRouter.route("/", suggestRouter);
agentsRouter.route("/", avatarRouter);
