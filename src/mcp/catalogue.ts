/**
 * The platform's MCP-server catalogue (and the workspace's custom servers), seen from one
 * workspace, and installing or uninstalling a platform server for that workspace.
 */
import { and, asc, eq, sql } from "drizzle-orm";
import { installable } from "../agents/installs";
import type { McpServerEntry } from "../agents/schemas";
import { mcpCustomIntegrations, mcpServers, workspaceMcpServers } from "../db/schema";
import { db } from "../platform/db";
import { notFound } from "../platform/problem";

const toEntry = (s: { slug: string; name: string; description: string; url: string }, installed: boolean) => ({
  slug: s.slug,
  name: s.name,
  description: s.description,
  url: s.url,
  installed,
  custom: false,
});

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
    ...rows.map((r) => toEntry(r, Boolean(r.installed))),
    ...custom.map((r) => ({ ...toEntry({ ...r, slug: `t:${r.slug}` }, true), custom: true })),
  ];
}

async function mcpServerEntry(env: Env, slug: string) {
  const [row] = await db(env).select().from(mcpServers).where(eq(mcpServers.slug, slug));
  if (!row) throw notFound(`No MCP server "${slug}" in the catalogue`);
  return row;
}

/** The MCP-server catalogue: listed as the workspace sees it; platform servers installed and uninstalled per workspace. */
export const mcpServerCatalogue = {
  list: listMcpServers,
  ...installable("mcp_servers", async (env, slug, installed) => toEntry(await mcpServerEntry(env, slug), installed)),
};
