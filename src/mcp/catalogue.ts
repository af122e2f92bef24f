/**
 * The platform's MCP-server catalogue (and the workspace's custom servers), seen from one
 * workspace, and installing or uninstalling a platform server for that workspace.
 */
import { and, asc, eq, sql } from "drizzle-orm";
import type { McpServerEntry } from "../agents/schemas";
import { agentsHolding, type InstallResult, removeFromEverySubset } from "../agents/subsets";
import { type AuditEventInput, auditInBatch, jsonBoolean } from "../audit/events";
import { mcpCustomIntegrations, mcpServers, workspaceMcpServers } from "../db/schema";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { notFound } from "../platform/problem";

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

async function mcpServerEntry(env: Env, slug: string) {
  const [row] = await db(env).select().from(mcpServers).where(eq(mcpServers.slug, slug));
  if (!row) throw notFound(`No MCP server "${slug}" in the catalogue`);
  return row;
}

const serverInstalled = (workspaceId: string, slug: string) =>
  sql`EXISTS (SELECT 1 FROM workspace_mcp_servers WHERE workspace_id = ${workspaceId} AND slug = ${slug})`;

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
