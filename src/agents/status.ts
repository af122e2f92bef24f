/** An agent's status (enabled or disabled), the workspace's default agent, and its avatar URL. */
import { and, eq, ne, sql } from "drizzle-orm";
import { type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { agents } from "../db/schema";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { badRequest, notFound } from "../platform/problem";
import type { AgentRow } from "./schemas";
import { getAgentRecord, toAgentRow } from "./service";

export type StatusChange = { agent: AgentRow; changed: boolean };
/** The event of a status change: told the agent's slug and whether this call changed anything. */
type StatusEvent = (change: { slug: string; changed: boolean }) => AuditEventInput;
type ChangeStatus = (env: Env, workspaceId: string, id: string, event: StatusEvent) => Promise<StatusChange>;

/** Disables an agent; the default agent cannot be disabled (400). Idempotent. */
export const disableAgent: ChangeStatus = async (env, workspaceId, id, event) => {
  const current = await getAgentRecord(env, workspaceId, id);
  const changed = current.status !== "disabled";
  const d = db(env);
  // The is_default condition lives in the statement, so a concurrent "make default" cannot slip in between.
  const [[row]] = await d.batch([
    d
      .update(agents)
      .set({ status: "disabled", updatedAt: nowIso() })
      .where(and(eq(agents.id, id), eq(agents.workspaceId, workspaceId), eq(agents.isDefault, false)))
      .returning(),
    auditInBatch(env, event({ slug: current.slug, changed }), { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
  ]);
  if (!row)
    throw badRequest("default_agent", "The default agent cannot be disabled; make another agent the default first");
  return { agent: toAgentRow(row), changed };
};

/** Enables an agent. Idempotent. */
export const enableAgent: ChangeStatus = async (env, workspaceId, id, event) => {
  const current = await getAgentRecord(env, workspaceId, id);
  const d = db(env);
  if (current.status === "enabled") {
    await auditInBatch(env, event({ slug: current.slug, changed: false })).run();
    return { agent: toAgentRow(current), changed: false };
  }
  const [[row]] = await d.batch([
    d
      .update(agents)
      .set({ status: "enabled", updatedAt: nowIso() })
      .where(and(eq(agents.id, id), eq(agents.workspaceId, workspaceId)))
      .returning(),
    auditInBatch(env, event({ slug: current.slug, changed: true }), { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
  ]);
  if (!row) throw notFound("No such agent in this workspace");
  return { agent: toAgentRow(row), changed: true };
};

/**
 * Moves the default flag to an enabled agent in one batch (one transaction): clear it on
 * the previous default, then set it here. Both statements re-check that the target is
 * enabled, and the partial unique index allows one default per workspace, so concurrent
 * calls leave exactly one default.
 */
export async function makeDefault(
  env: Env,
  workspaceId: string,
  id: string,
  event: (slug: string) => AuditEventInput,
): Promise<{ agent: AgentRow; previousDefaultId: string | null }> {
  const current = await getAgentRecord(env, workspaceId, id);
  if (current.status !== "enabled")
    throw badRequest("agent_disabled", "A disabled agent cannot be the default; enable it first");
  const d = db(env);
  const now = nowIso();
  const targetEnabled = sql`EXISTS (SELECT 1 FROM agents t WHERE t.id = ${id} AND t.workspace_id = ${workspaceId} AND t.status = 'enabled')`;
  // Written first, so the previous default is read inside the same transaction as the move.
  const previousDefault = sql`(SELECT p.id FROM agents p WHERE p.workspace_id = ${workspaceId} AND p.is_default = 1)`;
  const [, cleared, [row]] = await d.batch([
    auditInBatch(env, event(current.slug), {
      onlyIf: targetEnabled,
      detailsFromSql: { previous_default_id: previousDefault },
    }),
    d
      .update(agents)
      .set({ isDefault: false, updatedAt: now })
      .where(and(eq(agents.workspaceId, workspaceId), eq(agents.isDefault, true), ne(agents.id, id), targetEnabled))
      .returning({ id: agents.id }),
    d
      .update(agents)
      .set({ isDefault: true, updatedAt: now })
      .where(and(eq(agents.id, id), eq(agents.workspaceId, workspaceId), eq(agents.status, "enabled")))
      .returning(),
  ]);
  if (!row) throw badRequest("agent_disabled", "A disabled agent cannot be the default; enable it first");
  return { agent: toAgentRow(row), previousDefaultId: cleared[0]?.id ?? (current.isDefault ? id : null) };
}

/** Points the agent's avatar at a URL. */
export async function setAvatarUrl(
  env: Env,
  workspaceId: string,
  id: string,
  url: string,
  event: AuditEventInput,
): Promise<AgentRow> {
  const d = db(env);
  const [[row]] = await d.batch([
    d
      .update(agents)
      .set({ avatarUrl: url, updatedAt: nowIso() })
      .where(and(eq(agents.id, id), eq(agents.workspaceId, workspaceId)))
      .returning(),
    auditInBatch(env, event, { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
  ]);
  if (!row) throw notFound("No such agent in this workspace");
  return toAgentRow(row);
}
