import type { Context } from "hono";
import { type AuditDetails, type AuditEventOf, type AuditKind, auditAlone } from "../audit/events";
import { callerEvent } from "../http/audit";
import type { AppEnv } from "../http/context";
import { apiRoute, createRouter, jsonBody, jsonResponse, MiB } from "../http/route";
import { imageModel, languageModel } from "../llm/model";
import { baseUrl } from "../platform/env";
import { ApiError, problemResponse } from "../platform/problem";
import { readBusinessProfile } from "../profile/service";
import { avatarPrompt, generateAvatarImage } from "./avatar-generation";
import { avatarRouter } from "./avatar-routes";
import { decodeAvatarUpload, monogramAvatar, storeAvatar } from "./avatars";
import { DEFAULT_RUNTIME_PROFILE } from "./defaults";
import { createAgent, updateAgent } from "./edits";
import {
  AgentIdParamSchema,
  AgentListSchema,
  AgentMcpServersSchema,
  AgentRowSchema,
  AgentSkillsSchema,
  AvatarGenerateRequestSchema,
  AvatarGenerateResponseSchema,
  AvatarUploadRequestSchema,
  CreateAgentRequestSchema,
  SuggestInstructionsResponseSchema,
  UpdateAgentRequestSchema,
} from "./schemas";
import { getAgentRecord, listAgents, toAgentRow } from "./service";
import { disableAgent, enableAgent, makeDefault, setAvatarUrl } from "./status";
import { enabledSkillNames, getSubset, putSubset } from "./subsets";
import { draftInstructions } from "./suggest";

export const agentsRouter = createRouter();

const TAGS = ["Agents"];
const params = { params: AgentIdParamSchema };
const idErrors = {
  400: problemResponse("Malformed agent id or invalid request"),
  404: problemResponse("No such agent in this workspace"),
};
const agentResponse = (description: string) => jsonResponse(AgentRowSchema, description);
const origin = (c: Context<AppEnv>) => baseUrl(c.env, c.req.url);
/** An audit event about one agent; the intent defaults to the kind's verb. */
const agentEvent = <K extends AuditKind>(kind: K, id: string, details: AuditDetails<K>, intent?: string) =>
  ({
    kind,
    target: `agent:${id}`,
    agentId: id,
    intent,
    details,
  }) as AuditEventOf;

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
      "`skills` and `mcp_servers` must name installed entries. A slug or alias already used by any agent of the workspace is a 400 (`handle_taken`).",
    request: { body: jsonBody(CreateAgentRequestSchema) },
    responses: {
      200: agentResponse("The created agent"),
      400: problemResponse(
        "Invalid slug (`invalid_slug`), alias (`invalid_alias`), a taken handle (`handle_taken`), a " +
          "model outside the runtime profile (`invalid_model`), a skill or MCP server not installed, or " +
          "another bad field",
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
      "Writing `instructions` (even null) makes `instructions_is_default` false. Validation is the same as creation.",
    request: { ...params, body: jsonBody(UpdateAgentRequestSchema) },
    responses: { 200: agentResponse("The updated agent"), ...idErrors },
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

agentsRouter.openapi(
  apiRoute(
    "admin",
    {
      method: "post",
      path: "/v1/agents/{id}/avatar",
      tags: TAGS,
      summary: "Upload an agent's avatar",
      description:
        "`image_base64` is decoded and checked by content: PNG, JPEG, WebP or GIF, at most 1 MiB decoded. It is stored under its content hash " +
        "and `avatar_url` becomes its absolute download URL. Bodies over 2 MiB are refused with 413.",
      request: { ...params, body: jsonBody(AvatarUploadRequestSchema) },
      responses: {
        200: agentResponse("The agent with its new avatar_url"),
        400: problemResponse(
          "Malformed id, or an empty (`empty_image`), oversized (`image_too_large`), undecodable (`invalid_image`) or unsupported (`unsupported_image`) image",
        ),
        404: problemResponse("No such agent in this workspace"),
        413: problemResponse("Body over 2 MiB"),
      },
    },
    [],
    { maxBodyBytes: 2 * MiB },
  ),
  async (c) => {
    const { id } = c.req.valid("param");
    const workspaceId = c.var.caller.workspace.id;
    await getAgentRecord(c.env, workspaceId, id);
    const image = decodeAvatarUpload(c.req.valid("json").image_base64);
    const { url, hash } = await storeAvatar(c.env, origin(c), workspaceId, image);
    const agent = await setAvatarUrl(
      c.env,
      workspaceId,
      id,
      url,
      callerEvent(
        c,
        agentEvent(
          "agent.avatar",
          id,
          { source: "upload", content_type: image.contentType, size: image.bytes.length, sha256: hash },
          "set_avatar",
        ),
      ),
    );
    return c.json(agent, 200);
  },
);

agentsRouter.openapi(
  apiRoute("admin", {
    method: "post",
    path: "/v1/agents/{id}/avatar/generate",
    tags: TAGS,
    summary: "Generate an agent's avatar with the image model",
    description:
      "The optional `prompt` describes the look; it is wrapped in a fixed illustration style and safety rules and sent to the configured image model " +
      "(`IMAGE_MODEL`). Synchronous; the platform bears the cost. The image is stored and set as `avatar_url`.",
    request: { ...params, body: { ...jsonBody(AvatarGenerateRequestSchema), required: false } },
    responses: {
      200: jsonResponse(AvatarGenerateResponseSchema, "The new avatar URL"),
      ...idErrors,
      500: problemResponse(
        "Generation failed (`avatar_generation_failed`) or no image model is configured (`image_model_not_configured`)",
      ),
    },
  }),
  async (c) => {
    const { id } = c.req.valid("param");
    const workspaceId = c.var.caller.workspace.id;
    const agent = toAgentRow(await getAgentRecord(c.env, workspaceId, id));
    const model = imageModel(c.env);
    if (!model)
      throw new ApiError(
        500,
        "image_model_not_configured",
        "Avatar generation is not configured on this service (no image model)",
      );
    const image = await generateAvatarImage(model, avatarPrompt(agent, c.req.valid("json").prompt));
    const { url, hash } = await storeAvatar(c.env, origin(c), workspaceId, image);
    await setAvatarUrl(
      c.env,
      workspaceId,
      id,
      url,
      callerEvent(
        c,
        agentEvent(
          "agent.avatar",
          id,
          { source: "generated", content_type: image.contentType, size: image.bytes.length, sha256: hash },
          "generate_avatar",
        ),
      ),
    );
    return c.json({ avatar_url: url }, 200);
  },
);

for (const kind of ["skills", "mcp_servers"] as const) {
  const path = kind === "skills" ? "/v1/agents/{id}/skills" : "/v1/agents/{id}/mcp";
  const noun = kind === "skills" ? "skills" : "MCP servers";
  const schema = kind === "skills" ? AgentSkillsSchema : AgentMcpServersSchema;
  const wrap = (list: string[]) => (kind === "skills" ? { skills: list } : { mcp_servers: list });

  agentsRouter.openapi(
    apiRoute(
      { scope: "agents:read" },
      {
        method: "get",
        path,
        tags: TAGS,
        summary: `The agent's enabled ${noun}`,
        description: `An empty list means every ${noun.replace(/s$/, "")} installed for the workspace.`,
        request: params,
        responses: { 200: jsonResponse(schema, `Enabled ${noun}`), ...idErrors },
      },
    ),
    async (c) => c.json(wrap(await getSubset(c.env, c.var.caller.workspace.id, c.req.valid("param").id, kind)), 200),
  );

  agentsRouter.openapi(
    apiRoute("admin", {
      method: "put",
      path,
      tags: TAGS,
      summary: `Replace the agent's enabled ${noun}`,
      description:
        "Every slug must be installed for the workspace (400 otherwise). " +
        `An empty list resets to every installed ${noun.replace(/s$/, "")}. Duplicates are dropped.`,
      request: { ...params, body: jsonBody(schema) },
      responses: { 200: jsonResponse(schema, `The new subset`), ...idErrors },
    }),
    async (c) => {
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
    },
  );
}

agentsRouter.openapi(
  apiRoute("admin", {
    method: "post",
    path: "/v1/agents/{id}/suggest-instructions",
    tags: TAGS,
    summary: "Draft instructions for an agent",
    description:
      "Drafts a tailored system prompt from the business profile (when there is one), the agent's role, description and settings, and its skills. " +
      "The model never sees members, conversations, credentials or other agents; credentials and contact details are scrubbed from free text. " +
      "The draft is returned for review and not saved. No request body.",
    request: params,
    responses: {
      200: jsonResponse(SuggestInstructionsResponseSchema, "The draft"),
      ...idErrors,
      500: problemResponse(
        "The feature is disabled because no language-model provider is configured (`model_not_configured`), or the model failed (`suggestion_failed`)",
      ),
    },
  }),
  async (c) => {
    const { id } = c.req.valid("param");
    const caller = c.var.caller;
    const agent = toAgentRow(await getAgentRecord(c.env, caller.workspace.id, id));
    const model = languageModel(c.env);
    if (!model)
      throw new ApiError(
        500,
        "model_not_configured",
        "Instruction suggestions are disabled: no language-model provider is configured",
      );
    const [profile, enabled] = await Promise.all([
      readBusinessProfile(c.env, caller.workspace.id),
      getSubset(c.env, caller.workspace.id, id, "skills"),
    ]);
    const skills = await enabledSkillNames(c.env, caller.workspace.id, enabled);
    const draft = await draftInstructions(model, { agent, workspaceName: caller.workspace.name, profile, skills });
    await auditAlone(
      c.env,
      callerEvent(
        c,
        agentEvent(
          "agent.suggest",
          id,
          { profile_used: profile !== null, draft_length: draft.length },
          "suggest_instructions",
        ),
      ),
    );
    return c.json({ draft }, 200);
  },
);

agentsRouter.route("/", avatarRouter);
