import { and, asc, eq, type SQL, sql } from "drizzle-orm";
import { type AuditActor, type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { agents, skills, workspaceMcpServers, workspaceSkills } from "../db/schema";
import { type Db, db, parseJsonArray } from "../platform/db";
import { nowIso } from "../platform/env";
import { badRequest, notFound } from "../platform/problem";

/**
 * An agent's enabled skill and MCP-server subsets: lists of installed slugs, where an empty
 * list means "everything installed for the workspace".
 */
export type SubsetKind = "skills" | "mcp_servers";

/** Per kind: the workspace's installs and the agents' subset column naming them. */
export const TABLES = {
  skills: {
    installs: workspaceSkills,
    column: agents.skills,
    sqlColumn: sql.raw("skills"),
    sqlInstalls: sql.raw("workspace_skills"),
  },
  mcp_servers: {
    installs: workspaceMcpServers,
    column: agents.mcpServers,
    sqlColumn: sql.raw("mcp_servers"),
    sqlInstalls: sql.raw("workspace_mcp_servers"),
  },
} as const;

const NOUN: Record<SubsetKind, string> = { skills: "skill", mcp_servers: "MCP server" };

export const uniqueSlugs = (slugs: readonly string[]): string[] => [...new Set(slugs)];

/** 400 naming each slug that is not installed for the workspace. */
export async function assertInstalled(
  env: Env,
  workspaceId: string,
  kind: SubsetKind,
  slugs: readonly string[],
): Promise<void> {
  if (slugs.length === 0) return;
  const { installs } = TABLES[kind];
  // The list travels as one JSON parameter: an IN list would bind one variable per slug,
  // and D1 refuses statements with more than 100.
  const rows = await db(env)
    .select({ slug: installs.slug })
    .from(installs)
    .where(
      and(
        eq(installs.workspaceId, workspaceId),
        sql`${installs.slug} IN (SELECT value FROM json_each(${JSON.stringify(slugs)}))`,
      ),
    );
  const installed = new Set(rows.map((r) => r.slug));
  const errors = slugs.flatMap((s, i) =>
    installed.has(s)
      ? []
      : [{ path: `${kind}.${i}`, message: `${NOUN[kind]} "${s}" is not installed for this workspace` }],
  );
  if (errors.length) {
    throw badRequest(
      kind === "skills" ? "skill_not_installed" : "mcp_server_not_installed",
      errors[0]!.message,
      errors,
    );
  }
}

/**
 * Drops from an agent's subset every slug the workspace no longer has installed. Runs in
 * the same batch as a write of the subset, so an uninstall that raced the write still wins
 * (as if it had come after).
 */
export function keepInstalledOnly(d: Db, agentId: string, kind: SubsetKind) {
  const { sqlColumn, sqlInstalls } = TABLES[kind];
  return d
    .update(agents)
    .set({
      [kind === "skills" ? "skills" : "mcpServers"]:
        sql`(SELECT json_group_array(j.value) FROM json_each(agents.${sqlColumn}) j
        WHERE j.value IN (SELECT i.slug FROM ${sqlInstalls} i WHERE i.workspace_id = agents.workspace_id))`,
    })
    .where(eq(agents.id, agentId));
}

const REMOVED: Record<SubsetKind, { reason: string; detail: string }> = {
  skills: { reason: "only_skill_removed", detail: "skill" },
  mcp_servers: { reason: "only_mcp_server_removed", detail: "mcp_server" },
};

/**
 * One copy of `event` per agent of the workspace matching `where` (over `agents a`), naming
 * that agent as target, with `fields` (JSON paths) set from SQL over its row.
 */
function eventPerAgent(env: Env, event: AuditEventInput, where: SQL, fields: Record<string, SQL> = {}) {
  return auditInBatch(env, event, {
    from: {
      source: sql`FROM agents a WHERE a.workspace_id = ${event.workspaceId} AND ${where}`,
      workspaceId: sql`a.workspace_id`,
      idSuffix: sql`a.id`,
      fields: { "$.target": sql`'agent:' || a.id`, "$.agentId": sql`a.id`, "$.details.slug": sql`a.slug`, ...fields },
    },
  });
}

/** What removing an agent's only enabled skill or server does, for the route descriptions. */
export const onlyOneRemoved = (noun: string, reason: string) =>
  `An agent that had others simply loses this one. An agent for which it was the only enabled ${noun} is not ` +
  `widened to every installed ${noun} (what an empty subset means): it is disabled, as \`DELETE /v1/agents/{id}\` ` +
  `does, with an \`agent.disable\` event of reason \`${reason}\`; give it ${noun}s again before enabling it. The ` +
  `default agent cannot be disabled: it widens to every installed ${noun}, recorded as an \`agent.subset_widened\` event.`;

/**
 * Removes one slug from the subset of every agent of the workspace (on uninstall or delete),
 * as statements for the caller's batch. An agent for which it was the only one is never
 * widened silently to everything installed (what an empty subset means): a non-default agent
 * is disabled (`agent.disable`, reason `only_skill_removed` / `only_mcp_server_removed`); the
 * default agent, which cannot be disabled, widens with an `agent.subset_widened` event naming what was
 * removed. The events are read before the updates, while the subsets still hold the slug.
 */
export function removeFromEverySubset(
  env: Env,
  workspaceId: string,
  kind: SubsetKind,
  slug: string,
  actor: AuditActor,
) {
  const d = db(env);
  const { sqlColumn } = TABLES[kind];
  const onlyThis = (row: SQL) =>
    sql`EXISTS (SELECT 1 FROM json_each(${row}.${sqlColumn}) j WHERE j.value = ${slug})
      AND NOT EXISTS (SELECT 1 FROM json_each(${row}.${sqlColumn}) j WHERE j.value <> ${slug})`;
  const { reason, detail } = REMOVED[kind];
  const details = { reason, [detail]: slug };
  const wasEnabled = sql`json(CASE WHEN a.status = 'enabled' THEN 'true' ELSE 'false' END)`;
  return [
    eventPerAgent(
      env,
      { kind: "agent.disable", workspaceId, actor, details },
      sql`a.is_default = 0 AND ${onlyThis(sql.raw("a"))}`,
      { "$.details.changed": wasEnabled },
    ),
    eventPerAgent(
      env,
      { kind: "agent.subset_widened", workspaceId, actor, intent: "widen", details },
      sql`a.is_default = 1 AND ${onlyThis(sql.raw("a"))}`,
    ),
    d
      .update(agents)
      .set({ status: "disabled", updatedAt: nowIso() })
      .where(
        and(
          eq(agents.workspaceId, workspaceId),
          eq(agents.isDefault, false),
          eq(agents.status, "enabled"),
          onlyThis(sql.raw("agents")),
        ),
      ),
    d
      .update(agents)
      .set({
        [kind === "skills" ? "skills" : "mcpServers"]:
          sql`(SELECT json_group_array(j.value) FROM json_each(agents.${sqlColumn}) j WHERE j.value <> ${slug})`,
      })
      .where(
        and(
          eq(agents.workspaceId, workspaceId),
          sql`EXISTS (SELECT 1 FROM json_each(agents.${sqlColumn}) j WHERE j.value = ${slug})`,
        ),
      )
      .returning({ id: agents.id }),
  ] as const;
}

export async function getSubset(env: Env, workspaceId: string, agentId: string, kind: SubsetKind): Promise<string[]> {
  const { column } = TABLES[kind];
  const [row] = await db(env)
    .select({ list: column })
    .from(agents)
    .where(and(eq(agents.id, agentId), eq(agents.workspaceId, workspaceId)));
  if (!row) throw notFound("No such agent in this workspace");
  return parseJsonArray(row.list);
}

/** Replaces an agent's subset; every slug must be installed (400), an empty list means all. */
export async function putSubset(
  env: Env,
  workspaceId: string,
  agentId: string,
  kind: SubsetKind,
  slugs: readonly string[],
  event: (change: { before: string[]; after: string[] }) => AuditEventInput,
): Promise<{ before: string[]; after: string[] }> {
  const before = await getSubset(env, workspaceId, agentId, kind);
  const list = uniqueSlugs(slugs);
  await assertInstalled(env, workspaceId, kind, list);
  const d = db(env);
  const { column } = TABLES[kind];
  const [, , , [row]] = await d.batch([
    d
      .update(agents)
      .set({ [kind === "skills" ? "skills" : "mcpServers"]: JSON.stringify(list), updatedAt: nowIso() })
      .where(and(eq(agents.id, agentId), eq(agents.workspaceId, workspaceId))),
    auditInBatch(env, event({ before, after: list }), { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
    keepInstalledOnly(d, agentId, kind),
    d
      .select({ list: column })
      .from(agents)
      .where(and(eq(agents.id, agentId), eq(agents.workspaceId, workspaceId))),
  ]);
  if (!row) throw notFound("No such agent in this workspace");
  return { before, after: parseJsonArray(row.list) };
}

/** The names of the installed skills in `enabled` (every installed one when it is empty), ordered by slug. */
export async function enabledSkillNames(env: Env, workspaceId: string, enabled: readonly string[]): Promise<string[]> {
  const rows = await db(env)
    .select({ slug: skills.slug, name: skills.name })
    .from(skills)
    .innerJoin(
      workspaceSkills,
      and(eq(workspaceSkills.slug, skills.slug), eq(workspaceSkills.workspaceId, workspaceId)),
    )
    .orderBy(asc(skills.slug));
  return rows.filter((s) => enabled.length === 0 || enabled.includes(s.slug)).map((s) => s.name);
}
