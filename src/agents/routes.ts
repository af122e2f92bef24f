import type { Context } from "hono";
import { callerEvent } from "../http/audit";
import { type AppEnv, requestOrigin } from "../http/context";
import { type Endpoint, routesOf } from "../http/endpoint";
import { prefetched } from "../http/guards";
import { jsonBody } from "../http/route";
import { avatarEditRouter } from "./avatar-edit-routes";
import { avatarRouter } from "./avatar-routes";
import { monogramAvatar, storeAvatar } from "./avatars";
import { DEFAULT_RUNTIME_PROFILE } from "./defaults";
import { createAgent, updateAgent } from "./edits";
import { agentEvent, agentResponse, idErrors, params, pathAgent, TAGS } from "./route-parts";
import {
  AgentListSchema,
  AgentRequestProblemSchema,
  type AgentRow,
  CreateAgentRequestSchema,
  UpdateAgentRequestSchema,
} from "./schemas";
import { agentListRead, listAgents } from "./service";
import { disableAgent, enableAgent, makeDefault } from "./status";
import { subsetRouter } from "./subset-routes";
import { suggestRouter } from "./suggest-routes";

const route = routesOf(TAGS);

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

route(
  { scope: "agents:read" },
  "GET /v1/agents",
  "List the workspace's agents",
  {
    description: "Default agent first, then enabled agents, then by slug.",
    responses: { 200: [AgentListSchema, "The agents"] },
  },
  { read: agentListRead },
).handle(async (c) =>
  c.json({ agents: await listAgents(c.env, c.var.caller.workspace.id, prefetched(c, agentListRead)) }, 200),
);

route("admin", "POST /v1/agents", "Create an agent", {
  description:
    "Creates an enabled, non-default agent. Without `avatar_url`, an SVG monogram in a colour derived from the slug is generated and stored. `skills` and `mcp_servers` must name installed entries. A slug or alias already used by any agent of the workspace is a 400 (`handle_taken`). " +
    PINNED_MODEL_DOC,
  body: CreateAgentRequestSchema,
  responses: {
    200: agentResponse("The created agent"),
    400: agentProblem(
      "Invalid slug (`invalid_slug`), alias (`invalid_alias`), a taken handle (`handle_taken`), a model outside the runtime profile (`invalid_model`) or not offered by the provider (`unknown_model`, with `available_models`), a skill or MCP server not installed, or another bad field",
    ),
  },
}).handle(async (c) => {
  const body = c.req.valid("json");
  const workspaceId = c.var.caller.workspace.id;
  const agent = await createAgent(
    c.env,
    workspaceId,
    body,
    async () => {
      const { url } = await storeAvatar(
        c.env,
        requestOrigin(c),
        workspaceId,
        monogramAvatar(body.slug, body.display_name),
      );
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
});

route({ scope: "agents:read" }, "GET /v1/agents/{id}", "One agent", {
  request: params,
  responses: { 200: agentResponse("The agent"), ...idErrors },
}).handle(async (c) => c.json(await pathAgent(c, c.req.valid("param").id), 200));

route("admin", "PATCH /v1/agents/{id}", "Update an agent", {
  description:
    "Only the fields sent change; an explicit null clears a nullable field. Renaming the slug keeps the old slug as an alias. Writing `instructions` (even null) makes `instructions_is_default` false. Validation is the same as creation; the provider's model list is consulted only when the request sets `model`. " +
    PINNED_MODEL_DOC,
  request: { ...params, body: jsonBody(UpdateAgentRequestSchema) },
  responses: {
    200: agentResponse("The updated agent"),
    ...idErrors,
    400: agentProblem("Malformed agent id or invalid request (as creation, `unknown_model` included)"),
  },
}).handle(async (c) => {
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
});

/** A change of one agent's status; its route answers the agent as it now is. */
type StatusRoute = {
  endpoint: Endpoint;
  summary: string;
  description: string;
  ok: string;
  change: (c: Context<AppEnv>, id: string) => Promise<{ agent: AgentRow }>;
};

const STATUS_ROUTES: StatusRoute[] = [
  {
    endpoint: "DELETE /v1/agents/{id}",
    summary: "Disable an agent",
    description:
      "The agent stops routing on every surface. Idempotent. The default agent cannot be disabled (400 `default_agent`).",
    ok: "The disabled agent",
    change: (c, id) =>
      disableAgent(c.env, c.var.caller.workspace.id, id, (d) => callerEvent(c, agentEvent("agent.disable", id, d))),
  },
  {
    endpoint: "POST /v1/agents/{id}/enable",
    summary: "Enable an agent",
    description: "Routing is restored on every surface. Idempotent.",
    ok: "The enabled agent",
    change: (c, id) =>
      enableAgent(c.env, c.var.caller.workspace.id, id, (d) => callerEvent(c, agentEvent("agent.enable", id, d))),
  },
  {
    endpoint: "POST /v1/agents/{id}/default",
    summary: "Make an agent the workspace default",
    description:
      "The flag moves atomically from the previous default; exactly one agent holds it. A disabled agent is a 400 (`agent_disabled`).",
    ok: "The now-default agent",
    change: (c, id) =>
      makeDefault(c.env, c.var.caller.workspace.id, id, (slug) =>
        callerEvent(c, agentEvent("agent.default", id, { slug }, "make_default")),
      ),
  },
];

for (const { endpoint, summary, description, ok, change } of STATUS_ROUTES) {
  route("admin", endpoint, summary, {
    description,
    request: params,
    responses: { 200: agentResponse(ok), ...idErrors },
  }).handle(async (c) => c.json((await change(c, c.req.valid("param").id)).agent, 200));
}

export const agentsRouter = route.router
  .route("/", avatarEditRouter)
  .route("/", subsetRouter)
  .route("/", suggestRouter)
  .route("/", avatarRouter);
