import { hash } from "node:crypto";
import { convertToModelMessages, type ModelMessage, type UIMessage, type UIMessageChunk } from "ai";
import { and, asc, eq, gt, isNotNull } from "drizzle-orm";
import { agentCapabilities, getAgentRecord } from "../../agents/service";
import { type AuditActor, type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../../audit/events";
import { approvals, conversationParticipants } from "../../db/schema";
import { db } from "../../platform/db";
import { nowIso } from "../../platform/env";
import { logError } from "../../platform/log";
import { messageMember } from "../../teamchat/service";
import type { Approval } from "../approval-schemas";
import type { StoredPart, ToolCallSummary, TurnContextRow } from "./schema";
import { messages, turns } from "./schema";
import { eventsAfter, lastSeq, messageById, type RoomDb, recentHistory, type TurnRow, turnById } from "./store";
import type { RoomHost, TurnClaim, TurnInput } from "./types";

/** `APPROVAL_TTL` (seconds) when unset or not a positive number: 7 days. */
const DEFAULT_TTL_S = 604_800;

export const approvalTtlMs = (env: Env) => {
  const n = Number(env.APPROVAL_TTL);
  return (env.APPROVAL_TTL && Number.isFinite(n) && n > 0 ? n : DEFAULT_TTL_S) * 1000;
};

/** A tool call the turn holds back until a person decides (its tool part waits in `approval-requested`). */
export type PendingCall = { approvalId: string; toolCallId: string; toolName: string; input: unknown };

type ToolPart = Extract<StoredPart, { toolCallId: string }>;
const isToolPart = (p: StoredPart): p is ToolPart => p.type === "dynamic-tool" || p.type.startsWith("tool-");
const toolNameOf = (p: ToolPart) =>
  p.type === "dynamic-tool" ? (p as { toolName: string }).toolName : p.type.slice(5);

export function pendingCalls(parts: StoredPart[]): PendingCall[] {
  return parts.flatMap((p) =>
    isToolPart(p) && p.state === "approval-requested"
      ? [{ approvalId: p.approval.id, toolCallId: p.toolCallId, toolName: toolNameOf(p), input: p.input }]
      : [],
  );
}

/** The calls of every segment of a turn: a denied one did not run (`ok: false`). */
export function toolCallsOfParts(parts: StoredPart[]): ToolCallSummary[] {
  return parts.flatMap((p) =>
    isToolPart(p) && (p.state === "output-available" || p.state === "output-error" || p.state === "output-denied")
      ? [{ name: toolNameOf(p), ok: p.state === "output-available" }]
      : [],
  );
}

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

type ApprovalRow = typeof approvals.$inferSelect;

const toApproval = (r: ApprovalRow): Approval => ({
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

const requestedBy = (context: TurnContextRow) => context.userId ?? context.actor.id ?? null;

/**
 * The D1 side of a turn pausing: one pending approval per held-back call, each with its
 * `approval.requested` event (tool, who asked, the arguments' digest), in one batch.
 */
export function approvalRequests(
  env: Env,
  p: { conversationId: string; turnId: string; context: TurnContextRow; calls: PendingCall[]; at: string },
) {
  const expiresAt = new Date(Date.parse(p.at) + approvalTtlMs(env)).toISOString();
  const rows: ApprovalRow[] = p.calls.map((call) => ({
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
  }));
  const write = async () => {
    const d = db(env);
    const [first, ...rest] = rows.flatMap((row) => [
      d.insert(approvals).values(row),
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
      }),
    ]);
    if (first) await d.batch([first, ...rest]);
  };
  return { expiresAt, rows, write };
}

/** The turn waits: its state, and when its approvals expire (a new message is refused until then). */
export function awaitApproval(d: RoomDb, turnId: string, context: TurnContextRow, at: string): void {
  d.update(turns).set({ state: "awaiting_approval", context, endedAt: at }).where(eq(turns.id, turnId)).run();
}

/** The turn that waits for approvals, if one does (at most one: no turn starts meanwhile). */
export const awaitingTurn = (d: RoomDb): TurnRow | undefined =>
  d.select().from(turns).where(eq(turns.state, "awaiting_approval")).limit(1).get();

const isExpired = (r: { expiresAt: string }, now = Date.now()) => Date.parse(r.expiresAt) <= now;

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

const turnApprovals = (env: Env, conversationId: string, turnId: string) =>
  db(env)
    .select()
    .from(approvals)
    .where(and(eq(approvals.conversationId, conversationId), eq(approvals.turnId, turnId)))
    .orderBy(asc(approvals.requestedAt), asc(approvals.id))
    .all();

/** Pending approvals past their time become `expired` (each with its event); they count as denied. */
const expireLate = (env: Env, rows: ApprovalRow[]) =>
  expire(
    env,
    rows.filter((r) => r.state === "pending" && isExpired(r)),
  );

/** Pending approvals become `expired` now, decided by nobody (each with its event); they count as denied. */
async function expire(env: Env, late: ApprovalRow[]): Promise<void> {
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

/**
 * Takes a decision once: the approval must be pending and not expired (an expired one is
 * marked so, and counts as denied), and of two decisions racing only one changes the row.
 */
export async function decide(env: Env, conversationId: string, workspaceId: string, decision: Decision) {
  const d = db(env);
  const row = await d
    .select()
    .from(approvals)
    .where(and(eq(approvals.id, decision.approvalId), eq(approvals.conversationId, conversationId)))
    .get();
  if (!row || row.workspaceId !== workspaceId) return { answer: { kind: "not_found" } as DecisionAnswer };
  if (row.state === "expired") return { answer: { kind: "expired" } as DecisionAnswer };
  if (row.state !== "pending") return { answer: { kind: "decided" } as DecisionAnswer };
  if (isExpired(row)) {
    await expireLate(env, [row]);
    return { answer: { kind: "expired" } as DecisionAnswer, turnId: row.turnId };
  }
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
  if (!updated) return { answer: { kind: "decided" } as DecisionAnswer };
  return {
    answer: { kind: "accepted", approval: toApproval(updated), turnId: row.turnId } as DecisionAnswer,
    turnId: row.turnId,
  };
}

/** What the model is told of a call a person did not allow. */
const deniedReason = (row: ApprovalRow) =>
  row.state === "expired"
    ? "Nobody approved this tool call in time; it was not run."
    : `A person denied this tool call; it was not run.${row.reason ? ` Their reason: ${row.reason}` : ""}`;

/** The tool parts with the decisions in them (`approval-responded`), as `addToolApprovalResponse` leaves them. */
function responded(parts: StoredPart[], decided: Map<string, ApprovalRow>, forModel: boolean): StoredPart[] {
  return parts.map((p) => {
    if (!isToolPart(p) || p.state !== "approval-requested") return p;
    const row = decided.get(p.approval.id);
    if (!row) return p;
    const approved = row.state === "approved";
    const reason = forModel && !approved ? deniedReason(row) : (row.reason ?? undefined);
    return {
      ...p,
      state: "approval-responded",
      approval: { ...p.approval, approved, ...(reason ? { reason } : {}) },
    } as StoredPart;
  });
}

/** How a turn resumes after its decisions: its next stream segment, with the turn so far. */
export type Resume = {
  segment: number;
  /** The assistant message as it stands, which the new segment continues. */
  original: UIMessage;
  /** The same for the model, after the prompt (the decisions as tool approval responses). */
  continuation: ModelMessage[];
  /** The last event's sequence number and the events so far (a replay shows every segment). */
  seq: number;
  chunks: UIMessageChunk[];
};

export type ResumeStart = TurnClaim & {
  input: TurnInput;
  turnId: string;
  position: number;
  context: TurnContextRow;
  resume: Resume;
};

/**
 * When every approval of a waiting turn is decided (or expired), what resuming it takes:
 * the agent as it is now, the request's context as it was, the message with the decisions.
 * Null when the turn does not wait or still waits for another decision.
 */
export async function resumeStart(room: RoomHost, turnId: string): Promise<ResumeStart | null> {
  const { env } = room;
  const turn = turnById(room.db, turnId);
  if (turn?.state !== "awaiting_approval") return null;
  let rows = await turnApprovals(env, room.conversationId, turnId);
  if (rows.some((r) => r.state === "pending" && isExpired(r))) {
    await expireLate(env, rows);
    rows = await turnApprovals(env, room.conversationId, turnId);
  }
  if (rows.some((r) => r.state === "pending")) return null;
  const context = turn.context;
  const agent = await getAgentRecord(env, context.workspaceId, context.agentId);
  const capabilities = await agentCapabilities(env, agent);
  const message = messageById(room.db, turnId);
  const question = messageById(room.db, turn.userMessageId);
  if (!message || !question) return null;
  const decided = new Map(rows.map((r) => [r.id, r]));
  const continuation = await convertToModelMessages([
    { role: "assistant", parts: responded(message.parts, decided, true) },
  ]);
  const next: TurnContextRow = {
    ...context,
    question: undefined,
    approvalExpiresAt: undefined,
    segment: (context.segment ?? 1) + 1,
  };
  // A turn's caller always names a user (`TurnCaller`); one erased meanwhile is nobody.
  const userId = requestedBy(context) ?? "";
  return {
    input: {
      conversationId: room.conversationId,
      workspace: { id: context.workspaceId, name: context.workspaceName ?? "" },
      userId,
      actor: context.actor,
      origin: context.origin ?? "",
      agent,
      capabilities,
      profile: context.profile,
      content: question.content,
      idempotencyKey: null,
      hasCredits: true,
      stream: true,
    },
    turnId,
    position: turn.position,
    context: next,
    userMessageId: turn.userMessageId,
    prompt: question.content,
    history: recentHistory(room.db, question.position),
    messagesAdded: 0,
    resume: {
      segment: next.segment!,
      original: { id: turnId, role: "assistant", parts: responded(message.parts, decided, false) },
      continuation,
      seq: lastSeq(room.db, turnId),
      chunks: eventsAfter(room.db, turnId, 0).map((e) => e.chunk),
    },
  };
}

/** The resumed turn runs: its state and next segment are stored first, so a restart settles it as that segment. */
export function markResumed(d: RoomDb, turnId: string, context: TurnContextRow): void {
  d.update(turns).set({ state: "accepted", context, endedAt: null }).where(eq(turns.id, turnId)).run();
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
    .limit(500)
    .all();
  return rows.map((r) => toApproval(r.a));
}

/** A resumed turn's message, rewritten whole at the end of each later segment (it keeps its place). */
export function replaceMessage(d: RoomDb, m: Omit<typeof messages.$inferInsert, "position">): void {
  const { id, ...rest } = m;
  d.update(messages).set(rest).where(eq(messages.id, id)).run();
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

/**
 * Erasure: a user's approvals keep their decision but lose the user. Pending ones the user
 * asked for expire now (nobody is left to want them: their turn ends with the calls denied);
 * rows the user asked for lose the requester, rows they decided lose the decider and the
 * reason they wrote (their rooms forget it first, from `reasonsGiven`). Answers the rows
 * changed and the conversations whose turn no longer waits.
 */
export async function eraseApprovals(
  env: Env,
  workspaceId: string,
  userId: string,
): Promise<{ approvals: number; unblocked: string[] }> {
  const d = db(env);
  const mine = and(eq(approvals.workspaceId, workspaceId), eq(approvals.requestedBy, userId));
  const pending = await d
    .select()
    .from(approvals)
    .where(and(mine, eq(approvals.state, "pending")))
    .all();
  await expire(env, pending);
  const [requested, decided] = await d.batch([
    d.update(approvals).set({ requestedBy: null }).where(mine).returning({ id: approvals.id }),
    d
      .update(approvals)
      .set({ decidedBy: null, reason: null })
      .where(decidedBy(workspaceId, userId))
      .returning({ id: approvals.id }),
  ]);
  const touched = new Set([...requested, ...decided].map((r) => r.id));
  return { approvals: touched.size, unblocked: [...new Set(pending.map((r) => r.conversationId))] };
}

const decidedBy = (workspaceId: string, userId: string) =>
  and(eq(approvals.workspaceId, workspaceId), eq(approvals.decidedBy, userId));

/** A reason a user gave for a decision, which the turn's stored reply also holds. */
export type GivenReason = { conversationId: string; turnId: string; approvalId: string };

/** The decisions a user gave a reason for (read before `eraseApprovals` forgets them). */
export const reasonsGiven = (env: Env, workspaceId: string, userId: string): Promise<GivenReason[]> =>
  db(env)
    .select({ conversationId: approvals.conversationId, turnId: approvals.turnId, approvalId: approvals.id })
    .from(approvals)
    .where(and(decidedBy(workspaceId, userId), isNotNull(approvals.reason)))
    .all();

/** The room's side of erasure: the reasons go from the tool parts of the turns' replies. */
export function forgetReasons(d: RoomDb, given: GivenReason[]): void {
  for (const turnId of new Set(given.map((g) => g.turnId))) {
    const message = messageById(d, turnId);
    if (!message) continue;
    const ids = new Set(given.filter((g) => g.turnId === turnId).map((g) => g.approvalId));
    const parts = message.parts.map((p) => {
      if (!isToolPart(p) || !("approval" in p) || !p.approval || !ids.has(p.approval.id)) return p;
      const { reason: _, ...approval } = p.approval as { id: string; reason?: string };
      return { ...p, approval } as StoredPart;
    });
    d.update(messages).set({ parts }).where(eq(messages.id, turnId)).run();
  }
}
