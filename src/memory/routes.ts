import type { Context } from "hono";
import { callerEvent } from "../http/audit";
import type { AppEnv } from "../http/context";
import { routesOf } from "../http/endpoint";
import { problemResponse } from "../platform/problem";
import {
  AgentSlugParamSchema,
  FactIdParamSchema,
  FactListSchema,
  FreezeListSchema,
  FreezeRequestSchema,
  FreezeSchema,
  UnfreezeSchema,
} from "./schemas";
import { deleteFact, freezeAgent, listFacts, listFreezes, unfreezeAgent } from "./service";

const route = routesOf(["Memory"]);
/** Memory is always the caller's own: their workspace, their user id. */
const ownerOf = (c: Context<AppEnv>) => ({ workspaceId: c.var.caller.workspace.id, userId: c.var.caller.userId });
const unknownAgent = problemResponse("No agent of this workspace has that slug or alias");

route({ scope: "memory:read" }, "GET /v1/memory/facts", "The caller's remembered facts", {
  description:
    "Facts about the caller that agents stored with their `remember` tool, newest first. Each user keeps at most 200; remembering more drops the oldest.",
  responses: { 200: [FactListSchema, "The caller's facts"] },
}).handle(async (c) => c.json({ facts: await listFacts(c.env, ownerOf(c)) }, 200));

route({ scope: "memory:write" }, "DELETE /v1/memory/facts/{id}", "Forget one fact", {
  description: "Deletes one of the caller's own facts. Another user's fact, or one of another workspace, is a 404.",
  params: FactIdParamSchema,
  responses: { 204: "The fact is deleted", 400: "The id is not a UUID", 404: "No such fact of the caller" },
}).handle(async (c) => {
  const owner = ownerOf(c);
  const id = c.req.valid("param").id;
  await deleteFact(
    c.env,
    owner,
    id,
    callerEvent(c, {
      kind: "memory.fact.delete",
      target: `memory_fact:${id}`,
      intent: "delete",
      subjectUserId: owner.userId,
    }),
  );
  return c.body(null, 204);
});

route({ scope: "memory:read" }, "GET /v1/memory/freeze", "Agents the caller froze out of their memory", {
  description: "Newest first. A frozen agent neither reads nor writes facts about the caller.",
  responses: { 200: [FreezeListSchema, "The caller's freezes"] },
}).handle(async (c) => c.json({ freezes: await listFreezes(c.env, ownerOf(c)) }, 200));

route({ scope: "memory:write" }, "PUT /v1/memory/freeze/{agent_slug}", "Freeze an agent out of the caller's memory", {
  description:
    "From now on the agent gets no memory tools in the caller's turns, and tools it already holds refuse. The agent may be named by its slug or an alias; the freeze is kept under its current slug and holds across renames. Idempotent: repeating keeps the first `created_at` and replaces the reason.",
  params: AgentSlugParamSchema,
  body: FreezeRequestSchema,
  responses: {
    200: [FreezeSchema, "The freeze"],
    400: "Invalid body, or a slug longer than 64 characters",
    404: unknownAgent,
  },
}).handle(async (c) => {
  const owner = ownerOf(c);
  const { freeze } = await freezeAgent(
    c.env,
    owner,
    c.req.valid("param").agent_slug,
    c.req.valid("json").reason,
    (agent) =>
      callerEvent(c, {
        kind: "memory.freeze",
        target: `agent:${agent.id}`,
        agentId: agent.id,
        subjectUserId: owner.userId,
        details: { agent_slug: agent.slug },
      }),
  );
  return c.json(freeze, 200);
});

route({ scope: "memory:write" }, "DELETE /v1/memory/freeze/{agent_slug}", "Unfreeze an agent", {
  description:
    "The agent may read and write facts about the caller again. Idempotent: a slug that names no agent of the workspace is not frozen either, so it answers the same 200 (and records nothing when no freeze was removed).",
  params: AgentSlugParamSchema,
  responses: { 200: [UnfreezeSchema, "The agent is not frozen"], 400: "The slug is longer than 64 characters" },
}).handle(async (c) => {
  const owner = ownerOf(c);
  const { agentSlug } = await unfreezeAgent(c.env, owner, c.req.valid("param").agent_slug, (agent) =>
    callerEvent(c, {
      kind: "memory.unfreeze",
      target: agent.id ? `agent:${agent.id}` : `agent_slug:${agent.slug}`,
      agentId: agent.id,
      subjectUserId: owner.userId,
      details: { agent_slug: agent.slug },
    }),
  );
  return c.json({ agent_slug: agentSlug, frozen: false as const }, 200);
});

export const memoryRouter = route.router;
