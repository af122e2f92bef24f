/**
 * The platform's skill catalogue, seen from one workspace (with an `installed` flag), and
 * installing or uninstalling a skill for that workspace.
 */
import { and, asc, eq, sql } from "drizzle-orm";
import { installable } from "../agents/installs";
import type { SkillEntry } from "../agents/schemas";
import { skills, workspaceSkills } from "../db/schema";
import { db } from "../platform/db";
import { notFound } from "../platform/problem";
import { skillStatus } from "./availability";

const toEntry = (env: Env, s: { slug: string; name: string; description: string }, installed: boolean): SkillEntry => ({
  slug: s.slug,
  name: s.name,
  description: s.description,
  installed,
  ...skillStatus(env, s.slug),
});

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
  return rows.map((r) => toEntry(env, r, Boolean(r.installed)));
}

async function skillEntry(env: Env, slug: string) {
  const [row] = await db(env).select().from(skills).where(eq(skills.slug, slug));
  if (!row) throw notFound(`No skill "${slug}" in the catalogue`);
  return row;
}

/** The skill catalogue: listed as the workspace sees it; installed and uninstalled per workspace. */
export const skillCatalogue = {
  list: listSkills,
  ...installable("skills", async (env, slug, installed) => toEntry(env, await skillEntry(env, slug), installed)),
};
