import { hash } from "node:crypto";
import { and, asc, eq, gt } from "drizzle-orm";
import { auditInBatch } from "../../audit/events";
import { approvals, conversationParticipants } from "../../db/schema";
import { db } from "../../platform/db";
import { nowIso } from "../../platform/env";
import { literalLimit } from "../../platform/limit";
import { logError } from "../../platform/log";
import { messageMember } from "../../teamchat/service";
import type { Approval } from "../approval-schemas";
import type { PendingCall } from "./approval-parts";
import type { TurnContextRow } from "./schema";

/** `APPROVAL_TTL` (seconds) when unset or not a positive number: 7 days. */
const DEFAULT_TTL_S = 604_800;

export const approvalTtlMs = (env: Env) => {
  const n = Number(env.APPROVAL_TTL);
  return (env.APPROVAL_TTL && Number.isFinite(n) && n > 0 ? n : DEFAULT_TTL_S) * 1000;
};

/** JSON with object keys sorted, so the same arguments always hash the same. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object")
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  return JSON.stringify(value ?? null);
}

/** What the audit log and the approval keep of a call's arguments: their digest, never their text. */
export const inputDigest = (input: unknown) => hash("sha256", canonicalJson(input), "hex");

export type ApprovalRow = typeof approvals.$inferSelect;

export const toApproval = (r: ApprovalRow): Approval => ({
  id: r.id,
  conversation_id: r.conversationId,
  turn_id: r.turnId,
  tool_name: r.toolName,
  input_digest: r.inputDigest,
  requested_by: r.requestedBy,
  requested_at: r.requestedAt,
  expires_at: r.expiresAt,
  state: r.state,
  decided_by: r.decidedBy,
  decided_at: r.decidedAt,
  reason: r.reason,
});

export const requestedBy = (context: TurnContextRow) => context.userId ?? context.actor.id ?? null;

type RequestsOfTurn = {
  conversationId: string;
  turnId: string;
  context: TurnContextRow;
  calls: PendingCall[];
  at: string;
};

const pendingRow = (p: RequestsOfTurn, call: PendingCall, expiresAt: string): ApprovalRow => ({
  id: call.approvalId,
  workspaceId: p.context.workspaceId,
  conversationId: p.conversationId,
  turnId: p.turnId,
  toolName: call.toolName,
  inputDigest: inputDigest(call.input),
  requestedBy: requestedBy(p.context),
  requestedAt: p.at,
  expiresAt,
  state: "pending",
  decidedBy: null,
  decidedAt: null,
  reason: null,
});

/** The `approval.requested` event: the tool, who asked, the arguments' digest. */
const requestedEvent = (env: Env, p: RequestsOfTurn, row: ApprovalRow) =>
  auditInBatch(env, {
    workspaceId: row.workspaceId,
    kind: "approval.requested",
    actor: p.context.actor,
    target: `approval:${row.id}`,
    agentId: p.context.agentId,
    conversationId: p.conversationId,
    subjectUserId: row.requestedBy,
    details: {
      approval_id: row.id,
      turn_id: row.turnId,
      tool_name: row.toolName,
      input_digest: row.inputDigest,
      expires_at: row.expiresAt,
    },
  });

/**
 * The D1 side of a turn pausing: one pending approval per held-back call, each with its
 * `approval.requested` event, in one batch.
 */
export function approvalRequests(env: Env, p: RequestsOfTurn) {
  const expiresAt = new Date(Date.parse(p.at) + approvalTtlMs(env)).toISOString();
  const rows = p.calls.map((call) => pendingRow(p, call, expiresAt));
  const write = async () => {
    const d = db(env);
    const [first, ...rest] = rows.flatMap((row) => [d.insert(approvals).values(row), requestedEvent(env, p, row)]);
    if (first) await d.batch([first, ...rest]);
  };
  return { expiresAt, rows, write };
}

/** What waits for a member: the pending, unexpired approvals of conversations they take part in, oldest first. */
export async function pendingFor(env: Env, workspaceId: string, userId: string): Promise<Approval[]> {
  const rows = await db(env)
    .select({ a: approvals })
    .from(approvals)
    .innerJoin(
      conversationParticipants,
      and(
        eq(conversationParticipants.conversationId, approvals.conversationId),
        eq(conversationParticipants.userId, userId),
      ),
    )
    .where(
      and(eq(approvals.workspaceId, workspaceId), eq(approvals.state, "pending"), gt(approvals.expiresAt, nowIso())),
    )
    .orderBy(asc(approvals.requestedAt), asc(approvals.id))
    .limit(literalLimit(500))
    .all();
  return rows.map((r) => toApproval(r.a));
}

/**
 * Tells the member whose message started the turn, in Slack when the workspace has team chat,
 * that an agent waits for their decision (a link to the conversation; no buttons). Best effort.
 */
export async function notifyRequester(
  env: Env,
  p: { conversationId: string; context: TurnContextRow; calls: PendingCall[] },
): Promise<void> {
  const userId = requestedBy(p.context);
  if (!userId) return;
  const origin = p.context.origin ?? "";
  const tools = [...new Set(p.calls.map((c) => `\`${c.toolName}\``))].join(", ");
  const text =
    `An agent waits for your approval before it calls ${tools}. ` +
    `Conversation: ${origin}/v1/api/conversations/${p.conversationId} — what waits: ${origin}/v1/api/approvals`;
  await messageMember(env, p.context.workspaceId, userId, text).catch((e: unknown) =>
    logError("approvals: notifying the requester failed", e),
  );
}
