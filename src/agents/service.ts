import { and, asc, desc, eq, inArray, ne, sql } from "drizzle-orm";
import { type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { agentHandles, agents, workspaceMcpServers, workspaceSkills } from "../db/schema";
import { modelBelongsTo } from "../llm/models";
import { type Db, db, isUniqueViolation, parseJsonArray, preparedFor } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { badRequest, type FieldError, notFound } from "../platform/problem";
import {
  DEFAULT_AGENT_DISPLAY_NAME,
  DEFAULT_AGENT_INSTRUCTIONS,
  DEFAULT_AGENT_SLUG,
  DEFAULT_DELIVERY_MODE,
  DEFAULT_RUNTIME_PROFILE,
} from "./defaults";
import { HANDLE_RULE, handleProblem } from "./handles";
import type { AgentRow, CreateAgentRequest, UpdateAgentRequest } from "./schemas";
import { assertInstalled, keepInstalledOnly, uniqueSlugs } from "./subsets";

export type AgentRecord = typeof agents.$inferSelect;

export function toAgentRow(a: AgentRecord): AgentRow {
  return {
    id: a.id,
    slug: a.slug,
    display_name: a.displayName,
    aliases: parseJsonArray(a.aliases),
    cautions: parseJsonArray(a.cautions),
    languages: parseJsonArray(a.languages),
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

export async function listAgents(env: Env, workspaceId: string): Promise<AgentRow[]> {
  const rows = await statements(env).list.all({ workspaceId });
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

// ---- handles ----

/**
 * Checks the format and reserved words of the handles an agent is about to take (`fresh`:
 * the ones it does not hold yet, so a word reserved later does not block unrelated edits),
 * and that its slug and aliases do not repeat each other.
 */
function checkHandles(slug: string, aliases: readonly string[], fresh: (h: string) => boolean): void {
  const slugProblem = fresh(slug) ? handleProblem(slug) : null;
  if (slugProblem) {
    const detail = slugProblem === "reserved" ? `"${slug}" is a reserved word` : `slug must be ${HANDLE_RULE}`;
    throw badRequest("invalid_slug", detail, [{ path: "slug", message: detail }]);
  }
  const errors: FieldError[] = [];
  aliases.forEach((alias, i) => {
    const p = fresh(alias) ? handleProblem(alias) : null;
    if (p)
      errors.push({
        path: `aliases.${i}`,
        message: p === "reserved" ? `"${alias}" is a reserved word` : `alias must be ${HANDLE_RULE}`,
      });
  });
  if (errors.length) throw badRequest("invalid_alias", errors[0]!.message, errors);
  const seen = new Set([slug]);
  aliases.forEach((alias, i) => {
    if (seen.has(alias))
      errors.push({
        path: `aliases.${i}`,
        message: alias === slug ? "an alias cannot repeat the slug" : `"${alias}" is listed twice`,
      });
    seen.add(alias);
  });
  if (errors.length) throw badRequest("handle_taken", errors[0]!.message, errors);
}

/** After a handle collision, names the handles another agent of the workspace already holds. */
async function handleTaken(d: Db, workspaceId: string, agentId: string, slug: string, aliases: readonly string[]) {
  const held = await d
    .select({ handle: agentHandles.handle })
    .from(agentHandles)
    .where(
      and(
        eq(agentHandles.workspaceId, workspaceId),
        inArray(agentHandles.handle, [slug, ...aliases]),
        ne(agentHandles.agentId, agentId),
      ),
    );
  const taken = new Set(held.map((h) => h.handle));
  const errors: FieldError[] = [];
  if (taken.has(slug)) errors.push({ path: "slug", message: `"${slug}" is already a slug or alias of another agent` });
  aliases.forEach((a, i) => {
    if (taken.has(a))
      errors.push({ path: `aliases.${i}`, message: `"${a}" is already a slug or alias of another agent` });
  });
  // A concurrent writer may have released the handle again by now; the conflict still happened.
  return badRequest("handle_taken", errors[0]?.message ?? "A slug or alias is already taken in this workspace", errors);
}

/**
 * Brings `agent_handles` in line with the agent row's slug and aliases, inside the same
 * batch as the write that changed them. Deriving the rows from the stored row (rather
 * than from what the request computed) keeps the two consistent under concurrent edits;
 * a handle another agent holds fails the primary key and rolls the batch back.
 */
function syncHandles(d: Db, agentId: string) {
  const handlesOf = sql`SELECT slug AS handle FROM agents WHERE id = ${agentId}
    UNION SELECT j.value FROM agents a2, json_each(a2.aliases) j WHERE a2.id = ${agentId}`;
  return [
    d
      .delete(agentHandles)
      .where(and(eq(agentHandles.agentId, agentId), sql`${agentHandles.handle} NOT IN (${handlesOf})`)),
    d.insert(agentHandles).select(sql`SELECT a.workspace_id, h.handle, a.id FROM agents a, (${handlesOf}) h
      WHERE a.id = ${agentId}
        AND NOT EXISTS (SELECT 1 FROM agent_handles x WHERE x.workspace_id = a.workspace_id AND x.handle = h.handle AND x.agent_id = a.id)`),
  ] as const;
}

function checkModel(profile: string, model: string | null | undefined): void {
  if (model && !modelBelongsTo(profile, model)) {
    const detail = `model "${model}" does not belong to runtime profile "${profile}"`;
    throw badRequest("invalid_model", detail, [{ path: "model", message: detail }]);
  }
}

// ---- create and update ----

/** Checks everything about a create request that does not need the new row. */
async function validateCreate(env: Env, workspaceId: string, input: CreateAgentRequest) {
  const aliases = input.aliases ?? [];
  checkHandles(input.slug, aliases, () => true);
  const profile = input.runtime_profile ?? DEFAULT_RUNTIME_PROFILE;
  checkModel(profile, input.model);
  const skills = uniqueSlugs(input.skills ?? []);
  const mcpServers = uniqueSlugs(input.mcp_servers ?? []);
  await assertInstalled(env, workspaceId, "skills", skills);
  await assertInstalled(env, workspaceId, "mcp_servers", mcpServers);
  return { aliases, profile, skills, mcpServers };
}

/**
 * Creates an enabled, non-default agent. Its row, its handles and the subsets (filtered
 * to what is still installed) are written in one batch: a taken handle is a 400, never a
 * duplicate. `avatarFor` supplies the avatar URL when the request gives none.
 */
export async function createAgent(
  env: Env,
  workspaceId: string,
  input: CreateAgentRequest,
  avatarFor: (agentId: string) => Promise<string>,
  event: (agentId: string) => AuditEventInput,
): Promise<AgentRow> {
  const { aliases, profile, skills, mcpServers } = await validateCreate(env, workspaceId, input);
  const d = db(env);
  const id = newId();
  const now = nowIso();
  const avatarUrl = input.avatar_url ?? (await avatarFor(id));
  try {
    const [, , , , , , [row]] = await d.batch([
      d.insert(agents).values({
        id,
        workspaceId,
        slug: input.slug,
        displayName: input.display_name,
        description: input.description ?? null,
        instructions: input.instructions ?? null,
        // Nothing was seeded for a created agent; written instructions are the admin's own.
        instructionsIsDefault: input.instructions == null,
        tone: input.tone ?? null,
        verbosity: input.verbosity ?? null,
        aliases: JSON.stringify(aliases),
        cautions: JSON.stringify(input.cautions ?? []),
        languages: JSON.stringify(input.languages ?? []),
        skills: JSON.stringify(skills),
        mcpServers: JSON.stringify(mcpServers),
        runtimeProfile: profile,
        deliveryMode: DEFAULT_DELIVERY_MODE,
        model: input.model ?? null,
        avatarUrl,
        status: "enabled",
        isDefault: false,
        createdAt: now,
        updatedAt: now,
      }),
      ...syncHandles(d, id),
      keepInstalledOnly(d, id, "skills"),
      keepInstalledOnly(d, id, "mcp_servers"),
      auditInBatch(env, event(id)),
      d.select().from(agents).where(eq(agents.id, id)),
    ]);
    return toAgentRow(row!);
  } catch (e) {
    if (isUniqueViolation(e)) throw await handleTaken(d, workspaceId, id, input.slug, aliases);
    throw e;
  }
}

export type AgentUpdate = { before: AgentRow; after: AgentRow; changed: string[] };

/**
 * Applies the fields sent (null clears a nullable one). Renaming keeps the old slug as an
 * alias; writing `instructions` (even null) makes `instructions_is_default` false.
 */
export async function updateAgent(
  env: Env,
  workspaceId: string,
  id: string,
  input: UpdateAgentRequest,
  event: (change: AgentUpdate) => AuditEventInput,
): Promise<AgentUpdate> {
  const current = await getAgentRecord(env, workspaceId, id);
  const before = toAgentRow(current);
  const slug = input.slug ?? before.slug;
  const renamed = slug !== before.slug;
  let aliases = input.aliases ?? before.aliases.filter((a) => a !== slug);
  if (renamed && !aliases.includes(before.slug)) aliases = [...aliases, before.slug];
  if (aliases.length > 10) {
    throw badRequest("invalid_alias", "an agent has at most 10 aliases (a rename adds the old slug)", [
      { path: "aliases", message: "at most 10" },
    ]);
  }
  const held = new Set([before.slug, ...before.aliases]);
  checkHandles(slug, aliases, (h) => !held.has(h));
  const profile = input.runtime_profile ?? before.runtime_profile;
  const model = input.model !== undefined ? input.model : (before.model ?? null);
  checkModel(profile, model);

  const set: Partial<typeof agents.$inferInsert> = { updatedAt: nowIso() };
  if (input.slug !== undefined) set.slug = slug;
  if (input.slug !== undefined || input.aliases !== undefined) set.aliases = JSON.stringify(aliases);
  if (input.display_name !== undefined) set.displayName = input.display_name;
  if (input.description !== undefined) set.description = input.description;
  if (input.instructions !== undefined) {
    set.instructions = input.instructions;
    set.instructionsIsDefault = false;
  }
  if (input.tone !== undefined) set.tone = input.tone;
  if (input.verbosity !== undefined) set.verbosity = input.verbosity;
  if (input.cautions !== undefined) set.cautions = JSON.stringify(input.cautions);
  if (input.languages !== undefined) set.languages = JSON.stringify(input.languages);
  if (input.runtime_profile !== undefined) set.runtimeProfile = input.runtime_profile;
  if (input.model !== undefined) set.model = input.model;
  if (input.avatar_url !== undefined) set.avatarUrl = input.avatar_url;

  // The change is known before it is written, so its event commits in the same batch.
  const expected = diff(before, toAgentRow({ ...current, ...set }));
  const d = db(env);
  const update = d
    .update(agents)
    .set(set)
    .where(and(eq(agents.id, id), eq(agents.workspaceId, workspaceId)))
    .returning();
  const recorded = auditInBatch(env, event(expected), { onlyIf: PREVIOUS_STATEMENT_CHANGED });
  let row: AgentRecord | undefined;
  try {
    [[row]] = await d.batch([update, recorded, ...(set.aliases !== undefined ? syncHandles(d, id) : [])]);
  } catch (e) {
    if (isUniqueViolation(e)) throw await handleTaken(d, workspaceId, id, slug, aliases);
    throw e;
  }
  if (!row) throw notFound("No such agent in this workspace");
  return diff(before, toAgentRow(row));
}

function diff(before: AgentRow, after: AgentRow): AgentUpdate {
  const changed = (Object.keys(after) as (keyof AgentRow)[]).filter(
    (k) => JSON.stringify(before[k] ?? null) !== JSON.stringify(after[k] ?? null),
  );
  return { before, after, changed };
}

// ---- status and the default flag ----

export type StatusChange = { agent: AgentRow; changed: boolean };

/** Disables an agent; the default agent cannot be disabled (400). Idempotent. */
export async function disableAgent(
  env: Env,
  workspaceId: string,
  id: string,
  event: (change: { slug: string; changed: boolean }) => AuditEventInput,
): Promise<StatusChange> {
  const current = await getAgentRecord(env, workspaceId, id);
  const changed = current.status !== "disabled";
  const d = db(env);
  // The is_default condition lives in the statement, so a concurrent "make default" cannot slip in between.
  const [[row]] = await d.batch([
    d
      .update(agents)
      .set({ status: "disabled", updatedAt: nowIso() })
      .where(and(eq(agents.id, id), eq(agents.workspaceId, workspaceId), eq(agents.isDefault, false)))
      .returning(),
    auditInBatch(env, event({ slug: current.slug, changed }), { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
  ]);
  if (!row)
    throw badRequest("default_agent", "The default agent cannot be disabled; make another agent the default first");
  return { agent: toAgentRow(row), changed };
}

/** Enables an agent. Idempotent. */
export async function enableAgent(
  env: Env,
  workspaceId: string,
  id: string,
  event: (change: { slug: string; changed: boolean }) => AuditEventInput,
): Promise<StatusChange> {
  const current = await getAgentRecord(env, workspaceId, id);
  const d = db(env);
  if (current.status === "enabled") {
    await auditInBatch(env, event({ slug: current.slug, changed: false })).run();
    return { agent: toAgentRow(current), changed: false };
  }
  const [[row]] = await d.batch([
    d
      .update(agents)
      .set({ status: "enabled", updatedAt: nowIso() })
      .where(and(eq(agents.id, id), eq(agents.workspaceId, workspaceId)))
      .returning(),
    auditInBatch(env, event({ slug: current.slug, changed: true }), { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
  ]);
  if (!row) throw notFound("No such agent in this workspace");
  return { agent: toAgentRow(row), changed: true };
}

/**
 * Moves the default flag to an enabled agent in one batch (one transaction): clear it on
 * the previous default, then set it here. Both statements re-check that the target is
 * enabled, and the partial unique index allows one default per workspace, so concurrent
 * calls leave exactly one default.
 */
export async function makeDefault(
  env: Env,
  workspaceId: string,
  id: string,
  event: (slug: string) => AuditEventInput,
): Promise<{ agent: AgentRow; previousDefaultId: string | null }> {
  const current = await getAgentRecord(env, workspaceId, id);
  if (current.status !== "enabled")
    throw badRequest("agent_disabled", "A disabled agent cannot be the default; enable it first");
  const d = db(env);
  const now = nowIso();
  const targetEnabled = sql`EXISTS (SELECT 1 FROM agents t WHERE t.id = ${id} AND t.workspace_id = ${workspaceId} AND t.status = 'enabled')`;
  // Written first, so the previous default is read inside the same transaction as the move.
  const previousDefault = sql`(SELECT p.id FROM agents p WHERE p.workspace_id = ${workspaceId} AND p.is_default = 1)`;
  const [, cleared, [row]] = await d.batch([
    auditInBatch(env, event(current.slug), {
      onlyIf: targetEnabled,
      detailsFromSql: { previous_default_id: previousDefault },
    }),
    d
      .update(agents)
      .set({ isDefault: false, updatedAt: now })
      .where(and(eq(agents.workspaceId, workspaceId), eq(agents.isDefault, true), ne(agents.id, id), targetEnabled))
      .returning({ id: agents.id }),
    d
      .update(agents)
      .set({ isDefault: true, updatedAt: now })
      .where(and(eq(agents.id, id), eq(agents.workspaceId, workspaceId), eq(agents.status, "enabled")))
      .returning(),
  ]);
  if (!row) throw badRequest("agent_disabled", "A disabled agent cannot be the default; enable it first");
  return { agent: toAgentRow(row), previousDefaultId: cleared[0]?.id ?? (current.isDefault ? id : null) };
}

/** Points the agent's avatar at a URL. */
export async function setAvatarUrl(
  env: Env,
  workspaceId: string,
  id: string,
  url: string,
  event: AuditEventInput,
): Promise<AgentRow> {
  const d = db(env);
  const [[row]] = await d.batch([
    d
      .update(agents)
      .set({ avatarUrl: url, updatedAt: nowIso() })
      .where(and(eq(agents.id, id), eq(agents.workspaceId, workspaceId)))
      .returning(),
    auditInBatch(env, event, { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
  ]);
  if (!row) throw notFound("No such agent in this workspace");
  return toAgentRow(row);
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

/** The skills and MCP servers an agent may use: its subsets, or everything installed when a subset is empty. */
export async function agentCapabilities(
  env: Env,
  agent: AgentRecord,
): Promise<{ skills: string[]; mcpServers: string[] }> {
  const [skillRows, serverRows] = await db(env).batch([
    db(env)
      .select({ slug: workspaceSkills.slug })
      .from(workspaceSkills)
      .where(eq(workspaceSkills.workspaceId, agent.workspaceId)),
    db(env)
      .select({ slug: workspaceMcpServers.slug })
      .from(workspaceMcpServers)
      .where(eq(workspaceMcpServers.workspaceId, agent.workspaceId)),
  ]);
  const pick = (subset: string[], installed: { slug: string }[]) => {
    const all = installed.map((r) => r.slug);
    return subset.length ? subset.filter((s) => all.includes(s)) : all;
  };
  return {
    skills: pick(parseJsonArray(agent.skills), skillRows),
    mcpServers: pick(parseJsonArray(agent.mcpServers), serverRows),
  };
}

// ---- lookups by handle, for other areas ----

/** An agent as another area names it: by its current slug or any alias. */
export type AgentByHandle = { id: string; slug: string; handles: string[] };

/** Every handle (slug and aliases) an agent of the workspace holds; empty when there is no such agent. */
export async function agentHandlesOf(env: Env, workspaceId: string, agentId: string): Promise<string[]> {
  const rows = await db(env)
    .select({ handle: agentHandles.handle })
    .from(agentHandles)
    .where(and(eq(agentHandles.workspaceId, workspaceId), eq(agentHandles.agentId, agentId)));
  return rows.map((r) => r.handle);
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
