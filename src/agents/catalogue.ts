import { and, asc, eq, sql } from "drizzle-orm";
import { type AuditEventInput, auditInBatch, jsonBoolean } from "../audit/events";
import { mcpCustomIntegrations, mcpServers, skills, workspaceMcpServers, workspaceSkills } from "../db/schema";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { notFound } from "../platform/problem";
import { skillStatus } from "../skills/availability";
import type { McpServerEntry, SkillEntry } from "./schemas";
import { removeFromEverySubset } from "./subsets";

/**
 * The platform's skill and MCP-server catalogues, seen from one workspace (with an
 * `installed` flag), and installing or uninstalling an entry for that workspace.
 */

export async function listSkills(env: Env, workspaceId: string): Promise<SkillEntry[]> {
  const rows = await db(env)
    .select({
      slug: skills.slug,
      name: skills.name,
      description: skills.description,
      installed: sql<number>`${workspaceSkills.slug} IS NOT NULL`,
    })
    .from(skills)
    .leftJoin(workspaceSkills, and(eq(workspaceSkills.slug, skills.slug), eq(workspaceSkills.workspaceId, workspaceId)))
    .orderBy(asc(skills.slug));
  return rows.map((r) => ({ ...r, installed: Boolean(r.installed), ...skillStatus(env, r.slug) }));
}

export async function listMcpServers(env: Env, workspaceId: string): Promise<McpServerEntry[]> {
  const rows = await db(env)
    .select({
      slug: mcpServers.slug,
      name: mcpServers.name,
      description: mcpServers.description,
      url: mcpServers.url,
      installed: sql<number>`${workspaceMcpServers.slug} IS NOT NULL`,
    })
    .from(mcpServers)
    .leftJoin(
      workspaceMcpServers,
      and(eq(workspaceMcpServers.slug, mcpServers.slug), eq(workspaceMcpServers.workspaceId, workspaceId)),
    )
    .orderBy(asc(mcpServers.slug));
  const custom = await db(env)
    .select()
    .from(mcpCustomIntegrations)
    .where(eq(mcpCustomIntegrations.workspaceId, workspaceId))
    .orderBy(asc(mcpCustomIntegrations.slug));
  return [
    ...rows.map((r) => ({ ...r, installed: Boolean(r.installed), custom: false })),
    ...custom.map((r) => ({
      slug: `t:${r.slug}`,
      name: r.name,
      description: r.description,
      url: r.url,
      installed: true,
      custom: true,
    })),
  ];
}

async function skillEntry(env: Env, slug: string) {
  const [row] = await db(env).select().from(skills).where(eq(skills.slug, slug));
  if (!row) throw notFound(`No skill "${slug}" in the catalogue`);
  return row;
}

async function mcpServerEntry(env: Env, slug: string) {
  const [row] = await db(env).select().from(mcpServers).where(eq(mcpServers.slug, slug));
  if (!row) throw notFound(`No MCP server "${slug}" in the catalogue`);
  return row;
}

export type InstallResult<T> = { entry: T; changed: boolean; agentsUpdated: number };

const agentsHolding = (workspaceId: string, column: "skills" | "mcp_servers", slug: string) =>
  sql`(SELECT count(*) FROM agents a WHERE a.workspace_id = ${workspaceId}
    AND EXISTS (SELECT 1 FROM json_each(a.${sql.raw(column)}) j WHERE j.value = ${slug}))`;

/** One of the two catalogues: its per-workspace install table and the agent column that subsets it. */
type Catalogue<E> = {
  // Both install tables have the same columns (workspace_id, slug, installed_at).
  table: typeof workspaceSkills;
  column: "skills" | "mcp_servers";
  entry: (env: Env, slug: string, installed: boolean) => Promise<E>;
};

const SKILLS: Catalogue<SkillEntry> = {
  table: workspaceSkills,
  column: "skills",
  entry: async (env, slug, installed) => {
    const s = await skillEntry(env, slug);
    return { slug: s.slug, name: s.name, description: s.description, installed, ...skillStatus(env, s.slug) };
  },
};

const MCP_SERVERS: Catalogue<McpServerEntry> = {
  table: workspaceMcpServers as unknown as typeof workspaceSkills,
  column: "mcp_servers",
  entry: async (env, slug, installed) => {
    const s = await mcpServerEntry(env, slug);
    return { slug: s.slug, name: s.name, description: s.description, url: s.url, installed, custom: false };
  },
};

const installedIn = (table: typeof workspaceSkills, workspaceId: string, slug: string) =>
  sql`EXISTS (SELECT 1 FROM ${table} WHERE ${table.workspaceId} = ${workspaceId} AND ${table.slug} = ${slug})`;

/**
 * Installs a catalogue entry for the workspace. Idempotent. The event, written first in the
 * same batch, says whether this call changed anything (`changed`).
 */
async function install<E>(
  env: Env,
  catalogue: Catalogue<E>,
  workspaceId: string,
  slug: string,
  event: AuditEventInput,
): Promise<InstallResult<E>> {
  const entry = await catalogue.entry(env, slug, true);
  const { table } = catalogue;
  const d = db(env);
  const [, inserted] = await d.batch([
    auditInBatch(env, event, {
      detailsFromSql: { changed: jsonBoolean(sql`NOT ${installedIn(table, workspaceId, slug)}`) },
    }),
    d
      .insert(table)
      .values({ workspaceId, slug, installedAt: nowIso() })
      .onConflictDoNothing()
      .returning({ slug: table.slug }),
  ]);
  return { entry, changed: inserted.length > 0, agentsUpdated: 0 };
}

/**
 * Uninstalls a catalogue entry and removes it from every agent's subset, in one batch.
 * Idempotent. An agent whose subset held only this entry is disabled, or widened if it is the
 * default agent (see `removeFromEverySubset`), each with its event.
 */
async function uninstall<E>(
  env: Env,
  catalogue: Catalogue<E>,
  workspaceId: string,
  slug: string,
  event: AuditEventInput,
): Promise<InstallResult<E>> {
  const entry = await catalogue.entry(env, slug, false);
  const { table, column } = catalogue;
  const d = db(env);
  const [, deleted, , , , updated] = await d.batch([
    auditInBatch(env, event, {
      detailsFromSql: {
        changed: jsonBoolean(installedIn(table, workspaceId, slug)),
        agents_updated: agentsHolding(workspaceId, column, slug),
      },
    }),
    d
      .delete(table)
      .where(and(eq(table.workspaceId, workspaceId), eq(table.slug, slug)))
      .returning({ slug: table.slug }),
    ...removeFromEverySubset(env, workspaceId, column, slug, event.actor),
  ]);
  return { entry, changed: deleted.length > 0, agentsUpdated: updated.length };
}

export const installSkill = (env: Env, workspaceId: string, slug: string, event: AuditEventInput) =>
  install(env, SKILLS, workspaceId, slug, event);
export const uninstallSkill = (env: Env, workspaceId: string, slug: string, event: AuditEventInput) =>
  uninstall(env, SKILLS, workspaceId, slug, event);
export const installMcpServer = (env: Env, workspaceId: string, slug: string, event: AuditEventInput) =>
  install(env, MCP_SERVERS, workspaceId, slug, event);
export const uninstallMcpServer = (env: Env, workspaceId: string, slug: string, event: AuditEventInput) =>
  uninstall(env, MCP_SERVERS, workspaceId, slug, event);
