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

const skillInstalled = (workspaceId: string, slug: string) =>
  sql`EXISTS (SELECT 1 FROM workspace_skills WHERE workspace_id = ${workspaceId} AND slug = ${slug})`;
const serverInstalled = (workspaceId: string, slug: string) =>
  sql`EXISTS (SELECT 1 FROM workspace_mcp_servers WHERE workspace_id = ${workspaceId} AND slug = ${slug})`;
const agentsHolding = (workspaceId: string, column: "skills" | "mcp_servers", slug: string) =>
  sql`(SELECT count(*) FROM agents a WHERE a.workspace_id = ${workspaceId}
    AND EXISTS (SELECT 1 FROM json_each(a.${sql.raw(column)}) j WHERE j.value = ${slug}))`;

/**
 * Installs a catalogue skill for the workspace. Idempotent. The event, written first in the
 * same batch, says whether this call changed anything (`changed`).
 */
export async function installSkill(
  env: Env,
  workspaceId: string,
  slug: string,
  event: AuditEventInput,
): Promise<InstallResult<SkillEntry>> {
  const s = await skillEntry(env, slug);
  const d = db(env);
  const [, inserted] = await d.batch([
    auditInBatch(env, event, {
      detailsFromSql: { changed: jsonBoolean(sql`NOT ${skillInstalled(workspaceId, slug)}`) },
    }),
    d
      .insert(workspaceSkills)
      .values({ workspaceId, slug, installedAt: nowIso() })
      .onConflictDoNothing()
      .returning({ slug: workspaceSkills.slug }),
  ]);
  return {
    entry: { slug: s.slug, name: s.name, description: s.description, installed: true, ...skillStatus(env, s.slug) },
    changed: inserted.length > 0,
    agentsUpdated: 0,
  };
}

/**
 * Uninstalls a skill and removes it from every agent's subset, in one batch. Idempotent.
 * An agent whose subset held only this skill is disabled, or widened if it is the default
 * agent (see `removeFromEverySubset`), each with its event.
 */
export async function uninstallSkill(
  env: Env,
  workspaceId: string,
  slug: string,
  event: AuditEventInput,
): Promise<InstallResult<SkillEntry>> {
  const s = await skillEntry(env, slug);
  const d = db(env);
  const [, deleted, , , , updated] = await d.batch([
    auditInBatch(env, event, {
      detailsFromSql: {
        changed: jsonBoolean(skillInstalled(workspaceId, slug)),
        agents_updated: agentsHolding(workspaceId, "skills", slug),
      },
    }),
    d
      .delete(workspaceSkills)
      .where(and(eq(workspaceSkills.workspaceId, workspaceId), eq(workspaceSkills.slug, slug)))
      .returning({ slug: workspaceSkills.slug }),
    ...removeFromEverySubset(env, workspaceId, "skills", slug, event.actor),
  ]);
  return {
    entry: { slug: s.slug, name: s.name, description: s.description, installed: false, ...skillStatus(env, s.slug) },
    changed: deleted.length > 0,
    agentsUpdated: updated.length,
  };
}

export async function installMcpServer(
  env: Env,
  workspaceId: string,
  slug: string,
  event: AuditEventInput,
): Promise<InstallResult<McpServerEntry>> {
  const s = await mcpServerEntry(env, slug);
  const d = db(env);
  const [, inserted] = await d.batch([
    auditInBatch(env, event, {
      detailsFromSql: { changed: jsonBoolean(sql`NOT ${serverInstalled(workspaceId, slug)}`) },
    }),
    d
      .insert(workspaceMcpServers)
      .values({ workspaceId, slug, installedAt: nowIso() })
      .onConflictDoNothing()
      .returning({ slug: workspaceMcpServers.slug }),
  ]);
  return {
    entry: { slug: s.slug, name: s.name, description: s.description, url: s.url, installed: true, custom: false },
    changed: inserted.length > 0,
    agentsUpdated: 0,
  };
}

/** As `uninstallSkill`, for a platform MCP server. */
export async function uninstallMcpServer(
  env: Env,
  workspaceId: string,
  slug: string,
  event: AuditEventInput,
): Promise<InstallResult<McpServerEntry>> {
  const s = await mcpServerEntry(env, slug);
  const d = db(env);
  const [, deleted, , , , updated] = await d.batch([
    auditInBatch(env, event, {
      detailsFromSql: {
        changed: jsonBoolean(serverInstalled(workspaceId, slug)),
        agents_updated: agentsHolding(workspaceId, "mcp_servers", slug),
      },
    }),
    d
      .delete(workspaceMcpServers)
      .where(and(eq(workspaceMcpServers.workspaceId, workspaceId), eq(workspaceMcpServers.slug, slug)))
      .returning({ slug: workspaceMcpServers.slug }),
    ...removeFromEverySubset(env, workspaceId, "mcp_servers", slug, event.actor),
  ]);
  return {
    entry: { slug: s.slug, name: s.name, description: s.description, url: s.url, installed: false, custom: false },
    changed: deleted.length > 0,
    agentsUpdated: updated.length,
  };
}
