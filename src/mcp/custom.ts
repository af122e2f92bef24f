import { and, asc, eq, inArray } from "drizzle-orm";
import { removeFromEverySubset } from "../agents/subsets";
import { type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { mcpCustomIntegrations, mcpServers, workspaceMcpServers } from "../db/schema";
import { db, isUniqueViolation } from "../platform/db";
import { nowIso } from "../platform/env";
import { badRequest, conflict, notFound } from "../platform/problem";
import { open, seal } from "../platform/secret-box";
import { workspaceRows } from "../platform/workspace-rows";
import type { CreateCustom, Custom } from "./schemas";

/** Custom integrations are offered and enabled as `t:<slug>`. */
export const CUSTOM_PREFIX = "t:";

type Row = typeof mcpCustomIntegrations.$inferSelect;

// The sealed value is bound to the workspace, the integration and the header's name.
const aad = (workspaceId: string, slug: string, header: string) => `mcp:${workspaceId}:${slug}:${header.toLowerCase()}`;

function toCustom(row: Row): Custom {
  return {
    slug: `${CUSTOM_PREFIX}${row.slug}`,
    name: row.name,
    url: row.url,
    description: row.description,
    header_names: Object.keys(JSON.parse(row.headersSealed) as Record<string, string>),
    created_at: row.createdAt,
  };
}

export async function listCustom(env: Env, workspaceId: string): Promise<Custom[]> {
  return (await workspaceRows(env, mcpCustomIntegrations, workspaceId, asc(mcpCustomIntegrations.slug))).map(toCustom);
}

/** Adds the integration and installs it for the workspace, in one batch; header values sealed. */
export async function createCustom(
  env: Env,
  workspaceId: string,
  input: CreateCustom,
  event: (custom: Custom) => AuditEventInput,
): Promise<Custom> {
  const sealed: Record<string, string> = {};
  for (const [name, value] of Object.entries(input.headers ?? {}))
    sealed[name] = await seal(env, value, aad(workspaceId, input.slug, name));
  const now = nowIso();
  const row: Row = {
    workspaceId,
    slug: input.slug,
    name: input.name,
    url: input.url,
    description: input.description ?? "",
    headersSealed: JSON.stringify(sealed),
    createdAt: now,
  };
  const custom = toCustom(row);
  const d = db(env);
  try {
    await d.batch([
      d.insert(mcpCustomIntegrations).values(row),
      d.insert(workspaceMcpServers).values({ workspaceId, slug: custom.slug, installedAt: now }),
      auditInBatch(env, event(custom)),
    ]);
  } catch (e) {
    if (isUniqueViolation(e)) throw conflict("integration_exists", `The workspace already has "${custom.slug}"`);
    throw e;
  }
  return custom;
}

/**
 * Deletes an integration (`t:<slug>` or `<slug>`): its row (credentials included), its install
 * and every agent's enablement, in one batch; an agent for which it was the only enabled server
 * is disabled, or widened if it is the default agent (see `removeFromEverySubset`). A platform
 * catalogue slug is 400 `not_custom`.
 */
export async function deleteCustom(
  env: Env,
  workspaceId: string,
  given: string,
  event: (slug: string) => AuditEventInput,
): Promise<void> {
  const slug = given.startsWith(CUSTOM_PREFIX) ? given.slice(CUSTOM_PREFIX.length) : given;
  const d = db(env);
  const existing = await d
    .select({ slug: mcpCustomIntegrations.slug })
    .from(mcpCustomIntegrations)
    .where(and(eq(mcpCustomIntegrations.workspaceId, workspaceId), eq(mcpCustomIntegrations.slug, slug)))
    .get();
  if (!existing) {
    const platform = await d.select({ slug: mcpServers.slug }).from(mcpServers).where(eq(mcpServers.slug, given)).get();
    if (platform) throw badRequest("not_custom", `"${given}" is a platform MCP server; uninstall it instead`);
    throw notFound("No such custom integration in this workspace");
  }
  const full = `${CUSTOM_PREFIX}${slug}`;
  const deleted = event(full);
  await d.batch([
    d
      .delete(mcpCustomIntegrations)
      .where(and(eq(mcpCustomIntegrations.workspaceId, workspaceId), eq(mcpCustomIntegrations.slug, slug))),
    auditInBatch(env, deleted, { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
    d
      .delete(workspaceMcpServers)
      .where(and(eq(workspaceMcpServers.workspaceId, workspaceId), eq(workspaceMcpServers.slug, full))),
    ...removeFromEverySubset(env, workspaceId, "mcp_servers", full, deleted.actor),
  ]);
}

/** Where an agent's MCP servers are and how to call them; headers are opened only here, at call time. */
export type ServerTarget = { slug: string; name: string; url: string; headers: Record<string, string> };

export async function serverTargets(env: Env, workspaceId: string, slugs: readonly string[]): Promise<ServerTarget[]> {
  if (!slugs.length) return [];
  const custom = slugs.filter((s) => s.startsWith(CUSTOM_PREFIX)).map((s) => s.slice(CUSTOM_PREFIX.length));
  const platform = slugs.filter((s) => !s.startsWith(CUSTOM_PREFIX));
  const d = db(env);
  const [platformRows, customRows] = await Promise.all([
    platform.length ? d.select().from(mcpServers).where(inArray(mcpServers.slug, platform)).all() : [],
    custom.length
      ? d
          .select()
          .from(mcpCustomIntegrations)
          .where(and(eq(mcpCustomIntegrations.workspaceId, workspaceId), inArray(mcpCustomIntegrations.slug, custom)))
          .all()
      : [],
  ]);
  const targets: ServerTarget[] = platformRows.map((r) => ({ slug: r.slug, name: r.name, url: r.url, headers: {} }));
  for (const r of customRows) {
    const headers: Record<string, string> = {};
    for (const [name, sealed] of Object.entries(JSON.parse(r.headersSealed) as Record<string, string>))
      headers[name] = await open(env, sealed, aad(workspaceId, r.slug, name));
    targets.push({ slug: `${CUSTOM_PREFIX}${r.slug}`, name: r.name, url: r.url, headers });
  }
  return targets;
}
