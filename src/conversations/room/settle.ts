import type { UIMessageChunk } from "ai";
import { sql } from "drizzle-orm";
import { auditValues, preparedAuditInBatch } from "../../audit/events";
import { debitValues, preparedDebit } from "../../billing/ledger";
import { batchPrepared, preparedFor } from "../../platform/db";
import { nowIso } from "../../platform/env";
import { logError } from "../../platform/log";
import { turnCredits } from "../../runtime/credits";
import { estimateTokens } from "../../runtime/history";
import type { ToolCallSummary, TurnOutcome } from "../../runtime/turn";
import { preparedMessageAdded } from "../directory";
import { type PendingCall, pendingCalls, toolCallsOfParts } from "./approval-parts";
import { approvalRequests, notifyRequester } from "./approval-requests";
import { awaitApproval, replaceMessage } from "./approval-resume";
import { liveFrame } from "./live";
import { lastSegmentText, partsOf, textOf, toolCallsOf } from "./parts";
import type { ModelFailure, StoredPart, TurnContextRow } from "./schema";
import {
  appendEvent,
  endTurn,
  eventsAfter,
  insertMessage,
  KEPT_TURNS,
  lastSeq,
  messageById,
  pruneOlderTurns,
  questionWritten,
  type TurnRow,
  toMessage,
  turnById,
} from "./store";
import type { RoomHost, RunningTurn } from "./types";

/** The question's side of the directory on its own (the turn's end will not carry it). */
export async function writeQuestion(room: RoomHost, turnId: string, context: TurnContextRow): Promise<void> {
  const question = context.question;
  if (!question) return;
  context.question = undefined;
  try {
    await batchPrepared(room.env, directoryStatements(room.env), {
      conversationId: room.conversationId,
      at: question.at,
      added: question.added,
    });
    questionWritten(room.db, turnId);
  } catch (e) {
    // It goes with the turn's end instead.
    context.question = question;
    logError("room: updating the directory failed", e);
  }
}

export type Ending = {
  context: TurnContextRow;
  outcome: TurnOutcome | null;
  finish: TurnOutcome["finish"] | "interrupted" | "awaiting_approval";
  failure: ModelFailure | null;
};

/**
 * Ends a turn once: a reply (complete, stopped or cut short) is billed, counted in the
 * directory and audited in one D1 batch, then stored in the room; a turn whose model never
 * answered stores and bills nothing.
 */
export async function settle(room: RoomHost, running: RunningTurn, ending: Ending): Promise<void> {
  const { turnId } = running;
  // Built while it streamed when the stream ran whole, else from the events stored (the same chunks).
  const parts = running.parts ?? (await partsOf(running.chunks));
  const streamedText = textOf(parts);
  const segment = ending.context.segment ?? 1;
  const replied = ending.finish !== "failed" && ending.finish !== "interrupted";
  if (!replied && !(ending.finish === "interrupted" && streamedText)) {
    await writeQuestion(room, turnId, ending.context);
    room.storeEvents(running);
    endTurn(room.db, turnId, "failed", ending.failure, nowIso());
    return;
  }
  // Calls held back for a person: the turn waits for their decisions (a stopped turn asks nothing).
  const pending: PendingCall[] = ending.finish === "stopped" ? [] : pendingCalls(parts);
  // A cut-short segment is billed for what it said itself, not for the segments billed before it.
  const reply = replyOf(ending, parts, streamedText, segment > 1 ? lastSegmentText(running.chunks) : streamedText);
  if (pending.length || segment > 1) {
    reply.text = streamedText;
    if (segment > 1) reply.toolCalls = toolCallsOfParts(parts);
  }
  const at = nowIso();
  const requests = pending.length
    ? approvalRequests(room.env, {
        conversationId: room.conversationId,
        turnId,
        context: ending.context,
        calls: pending,
        at,
      })
    : null;
  try {
    await room.delivering(async () => {
      await requests?.write();
      await commit(room, turnId, { ...ending, finish: requests ? "awaiting_approval" : ending.finish }, reply, at);
    });
  } catch (error) {
    await writeQuestion(room, turnId, ending.context);
    room.storeEvents(running);
    endTurn(room.db, turnId, "failed", null, nowIso());
    throw error;
  }
  const stored = room.ctx.storage.transactionSync(() => {
    // The conversation was deleted while the batch ran: its room stays empty.
    if (!turnById(room.db, turnId)) return false;
    // The stream's last events (all of them, if nobody read it) are stored with its end.
    room.storeEvents(running);
    const earlier = segment > 1 ? messageById(room.db, turnId) : undefined;
    (earlier ? replaceMessage : insertMessage)(room.db, {
      id: turnId,
      role: "assistant",
      authorUserId: null,
      agentId: ending.context.agentId,
      content: reply.text,
      parts,
      toolCalls: reply.toolCalls,
      artifactIds: [...(earlier?.artifactIds ?? []), ...reply.artifactIds],
      // A message of several segments counts them all; each segment was billed on its own.
      inputTokens: (earlier?.inputTokens ?? 0) + reply.usage.input_tokens,
      outputTokens: (earlier?.outputTokens ?? 0) + reply.usage.output_tokens,
      credits: (earlier?.credits ?? 0) + reply.usage.credits,
      stopped: ending.finish === "stopped",
      createdAt: earlier?.createdAt ?? at,
    });
    if (requests) {
      awaitApproval(room.db, turnId, { ...ending.context, approvalExpiresAt: requests.expiresAt }, at);
    } else {
      const state = ending.finish === "stopped" ? "stopped" : replied ? "completed" : "failed";
      endTurn(room.db, turnId, state, ending.failure, at);
    }
    if (running.position > KEPT_TURNS) pruneOlderTurns(room.db);
    return true;
  });
  if (!stored) return;
  room.broadcast(() => liveFrame.message(toMessage(room.conversationId, messageById(room.db, turnId)!)));
  if (requests)
    room.ctx.waitUntil(
      notifyRequester(room.env, { conversationId: room.conversationId, context: ending.context, calls: pending }),
    );
}

type Reply = {
  text: string;
  toolCalls: ToolCallSummary[];
  artifactIds: string[];
  steps: number;
  usage: { input_tokens: number; output_tokens: number; credits: number };
};

/**
 * What the reply says and costs. A stopped or cut-short turn is billed for the provider's
 * usage when it reported any, else for the tokens of the text streamed so far (at least 1 credit).
 */
function replyOf(ending: Ending, parts: StoredPart[], streamedText: string, ownText: string): Reply {
  const { outcome, context } = ending;
  const complete = ending.finish !== "stopped" && ending.finish !== "interrupted";
  const reported = (outcome?.usage.input_tokens ?? 0) + (outcome?.usage.output_tokens ?? 0) > 0;
  const input = reported ? outcome!.usage.input_tokens : 0;
  const output = reported ? outcome!.usage.output_tokens : estimateTokens(ownText);
  return {
    text: complete && outcome ? outcome.text : streamedText,
    toolCalls: outcome?.toolCalls ?? toolCallsOf(parts),
    artifactIds: outcome?.artifactIds ?? [],
    steps: outcome?.steps ?? parts.filter((p) => p.type === "step-start").length,
    usage:
      complete && outcome
        ? outcome.usage
        : { input_tokens: input, output_tokens: output, credits: turnCredits(context.profile, input, output) },
  };
}

/**
 * The D1 side of a turn's end: its debit, the directory's count and the audit event, together
 * (with the question's side of the directory when it is not written yet).
 */
async function commit(room: RoomHost, turnId: string, ending: Ending, reply: Reply, at: string) {
  const { env } = room;
  const { context } = ending;
  const conversationId = room.conversationId;
  const event = auditValues(env, {
    workspaceId: context.workspaceId,
    kind: "conversation.turn",
    actor: context.actor,
    target: `conversation:${conversationId}`,
    agentId: context.agentId,
    conversationId,
    details: {
      message_id: turnId,
      runtime_profile: context.profile,
      model: context.model,
      steps: reply.steps,
      tools: reply.toolCalls.map((t) => t.name),
      finish: ending.finish,
      usage: { input: reply.usage.input_tokens, output: reply.usage.output_tokens },
      credits: reply.usage.credits,
    },
  });
  // Each segment of a turn that waited for approvals is billed once: `<id>`, then `<id>:2`, ….
  const segment = context.segment ?? 1;
  await batchPrepared(env, endStatements(env), {
    ...debitValues(context.workspaceId, reply.usage.credits, segment > 1 ? `${turnId}:${segment}` : turnId),
    conversationId,
    at,
    added: (segment > 1 ? 0 : 1) + (context.question?.added ?? 0),
    ...event,
  });
}

// The D1 statements of every turn, prepared once per isolate: the directory's side of a new
// message (as the turn starts), then the debit, the directory and the event (as it ends).
const directoryStatements = preparedFor(preparedMessageAdded);
const endStatements = preparedFor((d) => [
  preparedDebit(d),
  ...preparedMessageAdded(d),
  preparedAuditInBatch(d, { from: { source: sql``, workspaceId: sql`${sql.placeholder("workspaceId")}` } }),
]);

/**
 * A turn stored as running that no code runs (the room was evicted or restarted mid-turn):
 * it ends as `failed`, its partial text kept and billed, and its stream gets an error event.
 */
export async function settleInterrupted(room: RoomHost, turn: TurnRow): Promise<void> {
  // Ended meanwhile, or its conversation deleted.
  if (turnById(room.db, turn.id)?.state !== turn.state) return;
  let seq = lastSeq(room.db, turn.id);
  const failure = { status: null, message: "The turn was cut short when its conversation restarted" };
  const chunks = eventsAfter(room.db, turn.id, 0).map((e) => e.chunk);
  // A stream that ended (`finish`, `abort`) before the restart gets nothing after its end.
  const ended = ["finish", "abort"].includes(chunks.at(-1)?.type ?? "");
  if (!ended) {
    const error: UIMessageChunk = { type: "error", errorText: failure.message };
    appendEvent(room.db, turn.id, ++seq, JSON.stringify(error));
    chunks.push(error);
  }
  const running: RunningTurn = {
    turnId: turn.id,
    position: turn.position,
    seq,
    chunks,
    followers: new Set(),
    closed: true,
    settled: Promise.resolve(),
    stop: () => undefined,
    abandon: () => undefined,
    store: () => undefined,
  };
  await settle(room, running, { context: turn.context, outcome: null, finish: "interrupted", failure });
}
