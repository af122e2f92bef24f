import { convertToModelMessages, type ModelMessage, type UIMessage, type UIMessageChunk } from "ai";
import { eq } from "drizzle-orm";
import { type AgentRecord, agentCapabilities, type Capabilities, getAgentRecord } from "../../agents/service";
import { expireLate, isExpired, turnApprovals } from "./approval-decisions";
import { responded } from "./approval-parts";
import { type ApprovalRow, requestedBy } from "./approval-requests";
import type { TurnContextRow } from "./schema";
import { messages, turns } from "./schema";
import { eventsAfter, lastSeq, type MessageRow, messageById, type RoomDb, recentHistory, turnById } from "./store";
import type { RoomHost, TurnClaim, TurnInput } from "./types";

/** The turn waits: its state, and when its approvals expire (a new message is refused until then). */
export function awaitApproval(d: RoomDb, turnId: string, context: TurnContextRow, at: string): void {
  d.update(turns).set({ state: "awaiting_approval", context, endedAt: at }).where(eq(turns.id, turnId)).run();
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

/** The turn's approvals once none is pending (late ones expire first); null while one still is. */
async function decidedApprovals(room: RoomHost, turnId: string): Promise<ApprovalRow[] | null> {
  const { env } = room;
  let rows = await turnApprovals(env, room.conversationId, turnId);
  if (rows.some((r) => r.state === "pending" && isExpired(r))) {
    await expireLate(env, rows);
    rows = await turnApprovals(env, room.conversationId, turnId);
  }
  return rows.some((r) => r.state === "pending") ? null : rows;
}

/** The resumed turn's input: the request's context as it was, the agent as it is now. */
function resumedInput(
  room: RoomHost,
  context: TurnContextRow,
  agent: AgentRecord,
  capabilities: Capabilities,
  question: MessageRow,
): TurnInput {
  return {
    conversationId: room.conversationId,
    workspace: { id: context.workspaceId, name: context.workspaceName ?? "" },
    // A turn's caller always names a user (`TurnCaller`); one erased meanwhile is nobody.
    userId: requestedBy(context) ?? "",
    actor: context.actor,
    origin: context.origin ?? "",
    agent,
    capabilities,
    profile: context.profile,
    content: question.content,
    idempotencyKey: null,
    hasCredits: true,
    stream: true,
  };
}

/** The next segment: the message so far with the decisions in it, for the client and for the model. */
async function resumeOf(
  d: RoomDb,
  turnId: string,
  segment: number,
  message: MessageRow,
  decided: Map<string, ApprovalRow>,
): Promise<Resume> {
  return {
    segment,
    original: { id: turnId, role: "assistant", parts: responded(message.parts, decided, false) },
    continuation: await convertToModelMessages([{ role: "assistant", parts: responded(message.parts, decided, true) }]),
    seq: lastSeq(d, turnId),
    chunks: eventsAfter(d, turnId, 0).map((e) => e.chunk),
  };
}

/**
 * When every approval of a waiting turn is decided (or expired), what resuming it takes:
 * the agent as it is now, the request's context as it was, the message with the decisions.
 * Null when the turn does not wait or still waits for another decision.
 */
export async function resumeStart(room: RoomHost, turnId: string): Promise<ResumeStart | null> {
  const turn = turnById(room.db, turnId);
  if (turn?.state !== "awaiting_approval") return null;
  const rows = await decidedApprovals(room, turnId);
  if (!rows) return null;
  const context = turn.context;
  const agent = await getAgentRecord(room.env, context.workspaceId, context.agentId);
  const capabilities = await agentCapabilities(room.env, agent);
  const message = messageById(room.db, turnId);
  const question = messageById(room.db, turn.userMessageId);
  if (!message || !question) return null;
  const next: TurnContextRow = {
    ...context,
    question: undefined,
    approvalExpiresAt: undefined,
    segment: (context.segment ?? 1) + 1,
  };
  const decided = new Map(rows.map((r) => [r.id, r]));
  return {
    input: resumedInput(room, context, agent, capabilities, question),
    turnId,
    position: turn.position,
    context: next,
    userMessageId: turn.userMessageId,
    prompt: question.content,
    history: recentHistory(room.db, question.position),
    messagesAdded: 0,
    resume: await resumeOf(room.db, turnId, next.segment!, message, decided),
  };
}

/** The resumed turn runs: its state and next segment are stored first, so a restart settles it as that segment. */
export function markResumed(d: RoomDb, turnId: string, context: TurnContextRow): void {
  d.update(turns).set({ state: "accepted", context, endedAt: null }).where(eq(turns.id, turnId)).run();
}

/** A resumed turn's message, rewritten whole at the end of each later segment (it keeps its place). */
export function replaceMessage(d: RoomDb, m: Omit<typeof messages.$inferInsert, "position">): void {
  const { id, ...rest } = m;
  d.update(messages).set(rest).where(eq(messages.id, id)).run();
}
