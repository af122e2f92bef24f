/**
 * The platform's skill catalogue, seen from one workspace (with an `installed` flag), and
 * installing or uninstalling a skill for that workspace.
 */
import { and, asc, eq, sql } from "drizzle-orm";
import type { SkillEntry } from "../agents/schemas";
import { agentsHolding, type InstallResult, removeFromEverySubset } from "../agents/subsets";
import { type AuditEventInput, auditInBatch, jsonBoolean } from "../audit/events";
import { skills, workspaceSkills } from "../db/schema";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { notFound } from "../platform/problem";
import { skillStatus } from "./availability";

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

async function skillEntry(env: Env, slug: string) {
  const [row] = await db(env).select().from(skills).where(eq(skills.slug, slug));
  if (!row) throw notFound(`No skill "${slug}" in the catalogue`);
  return row;
}

const skillInstalled = (workspaceId: string, slug: string) =>
  sql`EXISTS (SELECT 1 FROM workspace_skills WHERE workspace_id = ${workspaceId} AND slug = ${slug})`;

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
