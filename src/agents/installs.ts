/**
 * Installing and uninstalling a catalogue entry (a skill or a platform MCP server) for a
 * workspace. Both are idempotent; the event, written first in the same batch, says whether
 * the call changed anything.
 */
import { and, eq, sql } from "drizzle-orm";
import { type AuditEventInput, auditInBatch, jsonBoolean } from "../audit/events";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { removeFromEverySubset, type SubsetKind, TABLES } from "./subsets";

/** What installing or uninstalling a catalogue entry did. */
export type InstallResult<T> = { entry: T; changed: boolean; agentsUpdated: number };

type Install<T> = (env: Env, workspaceId: string, slug: string, event: AuditEventInput) => Promise<InstallResult<T>>;

/**
 * Install and uninstall for the catalogue of `kind`. `entry` is one entry as the workspace sees
 * it once the call is done; it is read first, so a slug the catalogue does not have is refused
 * (its 404) before anything is written.
 */
export function installable<T>(
  kind: SubsetKind,
  entry: (env: Env, slug: string, installed: boolean) => Promise<T>,
): { install: Install<T>; uninstall: Install<T> } {
  const { installs, sqlInstalls, sqlColumn } = TABLES[kind];
  const isInstalled = (workspaceId: string, slug: string) =>
    sql`EXISTS (SELECT 1 FROM ${sqlInstalls} WHERE workspace_id = ${workspaceId} AND slug = ${slug})`;
  return {
    async install(env, workspaceId, slug, event) {
      const installed = await entry(env, slug, true);
      const d = db(env);
      const [, inserted] = await d.batch([
        auditInBatch(env, event, {
          detailsFromSql: { changed: jsonBoolean(sql`NOT ${isInstalled(workspaceId, slug)}`) },
        }),
        d
          .insert(installs)
          .values({ workspaceId, slug, installedAt: nowIso() })
          .onConflictDoNothing()
          .returning({ slug: installs.slug }),
      ]);
      return { entry: installed, changed: inserted.length > 0, agentsUpdated: 0 };
    },
    /**
     * Also removes the entry from every agent's subset, in the same batch: an agent whose subset
     * held only this entry is disabled, or widened if it is the default agent (see
     * `removeFromEverySubset`), each with its event.
     */
    async uninstall(env, workspaceId, slug, event) {
      const uninstalled = await entry(env, slug, false);
      const d = db(env);
      const [, deleted, , , , updated] = await d.batch([
        auditInBatch(env, event, {
          detailsFromSql: {
            changed: jsonBoolean(isInstalled(workspaceId, slug)),
            agents_updated: sql`(SELECT count(*) FROM agents a WHERE a.workspace_id = ${workspaceId}
              AND EXISTS (SELECT 1 FROM json_each(a.${sqlColumn}) j WHERE j.value = ${slug}))`,
          },
        }),
        d
          .delete(installs)
          .where(and(eq(installs.workspaceId, workspaceId), eq(installs.slug, slug)))
          .returning({ slug: installs.slug }),
        ...removeFromEverySubset(env, workspaceId, kind, slug, event.actor),
      ]);
      return { entry: uninstalled, changed: deleted.length > 0, agentsUpdated: updated.length };
    },
  };
}
