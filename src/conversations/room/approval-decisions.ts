import { and, asc, eq } from "drizzle-orm";
import { type AuditActor, type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../../audit/events";
import { approvals } from "../../db/schema";
import { db } from "../../platform/db";
import { nowIso } from "../../platform/env";
import type { Approval } from "../approval-schemas";
import { type ApprovalRow, toApproval } from "./approval-requests";

export const isExpired = (r: { expiresAt: string }, now = Date.now()) => Date.parse(r.expiresAt) <= now;

/** The `approval.decided` event of a decision (or of an expiry, decided by nobody). */
function decidedEvent(row: ApprovalRow, decision: Approval["state"], actor: AuditActor, decider: string | null) {
  return {
    workspaceId: row.workspaceId,
    kind: "approval.decided",
    actor,
    target: `approval:${row.id}`,
    conversationId: row.conversationId,
    details: {
      approval_id: row.id,
      turn_id: row.turnId,
      tool_name: row.toolName,
      decision,
      decider,
      input_digest: row.inputDigest,
    },
  } satisfies AuditEventInput;
}

export const turnApprovals = (env: Env, conversationId: string, turnId: string) =>
  db(env)
    .select()
    .from(approvals)
    .where(and(eq(approvals.conversationId, conversationId), eq(approvals.turnId, turnId)))
    .orderBy(asc(approvals.requestedAt), asc(approvals.id))
    .all();

/** Pending approvals past their time become `expired` (each with its event); they count as denied. */
export const expireLate = (env: Env, rows: ApprovalRow[]) =>
  expire(
    env,
    rows.filter((r) => r.state === "pending" && isExpired(r)),
  );

/** Pending approvals become `expired` now, decided by nobody (each with its event); they count as denied. */
export async function expire(env: Env, late: ApprovalRow[]): Promise<void> {
  if (!late.length) return;
  const d = db(env);
  const at = nowIso();
  const [first, ...rest] = late.flatMap((row) => [
    d
      .update(approvals)
      .set({ state: "expired", decidedAt: at })
      .where(and(eq(approvals.id, row.id), eq(approvals.state, "pending"))),
    auditInBatch(env, decidedEvent(row, "expired", { kind: "system", id: null }, null), {
      onlyIf: PREVIOUS_STATEMENT_CHANGED,
    }),
  ]);
  if (first) await d.batch([first, ...rest]);
}

export type Decision = {
  approvalId: string;
  approved: boolean;
  reason: string | null;
  decider: { userId: string; actor: AuditActor };
};

export type DecisionAnswer =
  | { kind: "not_found" }
  | { kind: "decided" }
  | { kind: "expired" }
  | { kind: "accepted"; approval: Approval; turnId: string };

/** A decision's answer, and the turn it may let resume. */
type DecisionOutcome = { answer: DecisionAnswer; turnId?: string };

const approvalOf = (env: Env, conversationId: string, approvalId: string) =>
  db(env)
    .select()
    .from(approvals)
    .where(and(eq(approvals.id, approvalId), eq(approvals.conversationId, conversationId)))
    .get();

/** Writes the decision and its event, unless another decision changed the row first (then undefined). */
async function recordDecision(env: Env, row: ApprovalRow, decision: Decision): Promise<ApprovalRow | undefined> {
  const d = db(env);
  const state = decision.approved ? "approved" : "denied";
  const [[updated]] = await d.batch([
    d
      .update(approvals)
      .set({ state, decidedBy: decision.decider.userId, decidedAt: nowIso(), reason: decision.reason })
      .where(and(eq(approvals.id, row.id), eq(approvals.state, "pending")))
      .returning(),
    auditInBatch(env, decidedEvent(row, state, decision.decider.actor, decision.decider.userId), {
      onlyIf: PREVIOUS_STATEMENT_CHANGED,
    }),
  ]);
  return updated;
}

/**
 * Takes a decision once: the approval must be pending and not expired (an expired one is
 * marked so, and counts as denied), and of two decisions racing only one changes the row.
 */
export async function decide(
  env: Env,
  conversationId: string,
  workspaceId: string,
  decision: Decision,
): Promise<DecisionOutcome> {
  const row = await approvalOf(env, conversationId, decision.approvalId);
  if (!row || row.workspaceId !== workspaceId) return { answer: { kind: "not_found" } };
  if (row.state === "expired") return { answer: { kind: "expired" } };
  if (row.state !== "pending") return { answer: { kind: "decided" } };
  if (isExpired(row)) {
    await expireLate(env, [row]);
    return { answer: { kind: "expired" }, turnId: row.turnId };
  }
  const updated = await recordDecision(env, row, decision);
  if (!updated) return { answer: { kind: "decided" } };
  return { answer: { kind: "accepted", approval: toApproval(updated), turnId: row.turnId }, turnId: row.turnId };
}
