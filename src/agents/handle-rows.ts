/** The handles an agent takes: their checks, and the `agent_handles` rows that keep them unique. */
import { and, eq, inArray, ne, sql } from "drizzle-orm";
import { agentHandles } from "../db/schema";
import type { Db } from "../platform/db";
import { badRequest, type FieldError } from "../platform/problem";
import { HANDLE_RULE, handleProblem } from "./handles";

/**
 * Checks the format and reserved words of the handles an agent is about to take (`fresh`:
 * the ones it does not hold yet, so a word reserved later does not block unrelated edits),
 * and that its slug and aliases do not repeat each other.
 */
export function checkHandles(slug: string, aliases: readonly string[], fresh: (h: string) => boolean): void {
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
export async function handleTaken(
  d: Db,
  workspaceId: string,
  agentId: string,
  slug: string,
  aliases: readonly string[],
) {
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
export function syncHandles(d: Db, agentId: string) {
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
