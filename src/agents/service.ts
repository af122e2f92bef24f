/** Agents as rows: reading them, the signup's default agent, and the lookups other areas make. */
import { and, asc, desc, eq, type Placeholder, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import type { WorkspaceRead } from "../auth/resolve";
import { agentHandles, agents, workspaceMcpServers, workspaceSkills, workspaces } from "../db/schema";
import { type Db, db, parseJsonArray, preparedFor } from "../platform/db";
import { newId } from "../platform/ids";
import { badRequest, notFound } from "../platform/problem";
import {
  DEFAULT_AGENT_DISPLAY_NAME,
  DEFAULT_AGENT_INSTRUCTIONS,
  DEFAULT_AGENT_SLUG,
  DEFAULT_DELIVERY_MODE,
  DEFAULT_RUNTIME_PROFILE,
} from "./defaults";
import type { AgentRow } from "./schemas";

export type AgentRecord = typeof agents.$inferSelect;

export function toAgentRow(a: AgentRecord): AgentRow {
  return {
    id: a.id,
    slug: a.slug,
    display_name: a.displayName,
    aliases: parseJsonArray(a.aliases),
    cautions: parseJsonArray(a.cautions),
    languages: parseJsonArray(a.languages),
    approval_required: parseJsonArray(a.approvalRequired),
    runtime_profile: a.runtimeProfile,
    delivery_mode: a.deliveryMode,
    status: a.status,
    is_default: a.isDefault,
    instructions_is_default: a.instructionsIsDefault,
    created_at: a.createdAt,
    avatar_url: a.avatarUrl,
    description: a.description,
    instructions: a.instructions,
    model: a.model,
    tone: a.tone as AgentRow["tone"],
    verbosity: a.verbosity as AgentRow["verbosity"],
  };
}

const statements = preparedFor((d) => ({
  list: d
    .select()
    .from(agents)
    .where(eq(agents.workspaceId, sql.placeholder("workspaceId")))
    // default first, then enabled, then by slug
    .orderBy(desc(agents.isDefault), asc(sql`${agents.status} <> 'enabled'`), asc(agents.slug))
    .prepare(),
  get: d
    .select()
    .from(agents)
    .where(and(eq(agents.id, sql.placeholder("id")), eq(agents.workspaceId, sql.placeholder("workspaceId"))))
    .prepare(),
}));

/** The read of `listAgents`, which the route's credential check can make in its own D1 batch. */
export const agentListRead: WorkspaceRead = (env) => statements(env).list;

/** The workspace's agents; `read` when the credential check already read them (see `agentListRead`). */
export async function listAgents(env: Env, workspaceId: string, read?: unknown): Promise<AgentRow[]> {
  const rows = (read as AgentRecord[] | undefined) ?? (await statements(env).list.all({ workspaceId }));
  return rows.map(toAgentRow);
}

/** The agent, or 404 when it does not exist in this workspace. */
export async function getAgentRecord(env: Env, workspaceId: string, id: string): Promise<AgentRecord> {
  const row = await statements(env).get.get({ id, workspaceId });
  if (!row) throw notFound("No such agent in this workspace");
  return row;
}

/** Statements that create a new workspace's default agent (run in the signup batch). */
export function defaultAgentInserts(d: Db, workspaceId: string, now: string) {
  const id = newId();
  return [
    d.insert(agents).values({
      id,
      workspaceId,
      slug: DEFAULT_AGENT_SLUG,
      displayName: DEFAULT_AGENT_DISPLAY_NAME,
      instructions: DEFAULT_AGENT_INSTRUCTIONS,
      instructionsIsDefault: true,
      runtimeProfile: DEFAULT_RUNTIME_PROFILE,
      deliveryMode: DEFAULT_DELIVERY_MODE,
      status: "enabled",
      isDefault: true,
      createdAt: now,
      updatedAt: now,
    }),
    d.insert(agentHandles).values({ workspaceId, handle: DEFAULT_AGENT_SLUG, agentId: id }),
  ] as const;
}

// ---- for other areas: the agent a turn runs as ----

/**
 * The enabled agent answering to `handle` (its slug or an alias), or the workspace's default
 * agent when no handle is given. 404 for an unknown handle, 400 `agent_disabled` for a disabled agent.
 */
export async function resolveAgent(env: Env, workspaceId: string, handle?: string | null): Promise<AgentRecord> {
  const d = db(env);
  const agent = handle
    ? await d
        .select({ a: agents })
        .from(agentHandles)
        .innerJoin(agents, eq(agents.id, agentHandles.agentId))
        .where(and(eq(agentHandles.workspaceId, workspaceId), eq(agentHandles.handle, handle)))
        .get()
        .then((r) => r?.a)
    : await d
        .select()
        .from(agents)
        .where(and(eq(agents.workspaceId, workspaceId), eq(agents.isDefault, true)))
        .get();
  if (!agent) throw notFound(handle ? `No agent @${handle} in this workspace` : "The workspace has no default agent");
  if (agent.status !== "enabled") throw badRequest("agent_disabled", `The agent @${agent.slug} is disabled`);
  return agent;
}

/**
 * The slugs of the skills and of the MCP servers installed in the workspace, as two JSON-array
 * columns of one statement (another area's too: see the turn's preflight). Read with `capabilitiesOf`.
 */
export function installedColumns(workspaceId: string | Placeholder) {
  const slugs = (t: typeof workspaceSkills | typeof workspaceMcpServers) =>
    sql<string>`(SELECT json_group_array(${t.slug}) FROM ${t} WHERE ${t.workspaceId} = ${workspaceId})`;
  return { installedSkills: slugs(workspaceSkills), installedServers: slugs(workspaceMcpServers) };
}

export type Capabilities = { skills: string[]; mcpServers: string[] };

/** The skills and MCP servers an agent may use: its subsets, or everything installed when a subset is empty. */
export function capabilitiesOf(
  agent: AgentRecord,
  installed: { installedSkills: string; installedServers: string },
): Capabilities {
  const pick = (subset: string[], all: string[]) => (subset.length ? subset.filter((s) => all.includes(s)) : all);
  return {
    skills: pick(parseJsonArray(agent.skills), parseJsonArray(installed.installedSkills)),
    mcpServers: pick(parseJsonArray(agent.mcpServers), parseJsonArray(installed.installedServers)),
  };
}

export async function agentCapabilities(env: Env, agent: AgentRecord): Promise<Capabilities> {
  const installed = await db(env)
    .select(installedColumns(agent.workspaceId))
    .from(workspaces)
    .where(eq(workspaces.id, agent.workspaceId))
    .get();
  return capabilitiesOf(agent, installed ?? { installedSkills: "[]", installedServers: "[]" });
}

/**
 * Joins `turnAgent` (an alias of `agents`) to the agent answering to `handle` in the workspace
 * (enabled or not), or, when `handle` is "", to the agent whose id `ofConversation` selects (the
 * conversation's own); `usableAgent`'s rules apply to its row. Placeholders allowed, for a
 * statement prepared once.
 */
export function turnAgentOn(
  d: Db,
  turnAgent: { workspaceId: SQLiteColumn; id: SQLiteColumn },
  on: { workspaceId: Placeholder; handle: Placeholder; ofConversation: SQLiteColumn },
) {
  const byHandle = d
    .select({ id: agentHandles.agentId })
    .from(agentHandles)
    .where(and(eq(agentHandles.workspaceId, on.workspaceId), eq(agentHandles.handle, on.handle)));
  return and(
    eq(turnAgent.workspaceId, on.workspaceId),
    eq(turnAgent.id, sql`CASE WHEN ${on.handle} = '' THEN ${on.ofConversation} ELSE (${byHandle}) END`),
  );
}

/** 404 for no agent, 400 `agent_disabled` for a disabled one. */
export function usableAgent(agent: AgentRecord | undefined, handle?: string): AgentRecord {
  if (!agent) throw notFound(handle ? `No agent @${handle} in this workspace` : "No such agent in this workspace");
  if (agent.status !== "enabled") throw badRequest("agent_disabled", `The agent @${agent.slug} is disabled`);
  return agent;
}

// ---- lookups by handle, for other areas ----

/** An agent as another area names it: by its current slug or any alias. */
export type AgentByHandle = { id: string; slug: string; handles: string[] };

/** Every handle (slug and aliases) an agent of the workspace holds; empty when there is no such agent. */
export async function agentHandlesOf(env: Env, workspaceId: string, agentId: string): Promise<string[]> {
  const rows = await agentHandlesQuery(db(env), workspaceId, agentId);
  return rows.map((r) => r.handle);
}

/** The query behind `agentHandlesOf`, for another area's batch or statement (placeholders allowed). */
export function agentHandlesQuery(
  d: Db,
  workspaceId: string | Placeholder,
  agentId: string | Placeholder | SQL | SQLiteColumn,
) {
  return d
    .select({ handle: agentHandles.handle })
    .from(agentHandles)
    .where(and(eq(agentHandles.workspaceId, workspaceId), eq(agentHandles.agentId, agentId)));
}

/** The agent of the workspace holding `handle` (enabled or disabled), or null. */
export async function findAgentByHandle(env: Env, workspaceId: string, handle: string): Promise<AgentByHandle | null> {
  const [row] = await db(env)
    .select({ id: agents.id, slug: agents.slug })
    .from(agentHandles)
    .innerJoin(agents, eq(agents.id, agentHandles.agentId))
    .where(and(eq(agentHandles.workspaceId, workspaceId), eq(agentHandles.handle, handle)));
  if (!row) return null;
  return { ...row, handles: await agentHandlesOf(env, workspaceId, row.id) };
}
