import { readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import { sql } from "drizzle-orm";
import { type AgentRecord, toAgentRow } from "../../agents/service";
import { auditValues, preparedAuditInBatch } from "../../audit/events";
import { debitValues, preparedDebit } from "../../billing/ledger";
import { modelFailure } from "../../llm/errors";
import { agentLanguageModel } from "../../llm/model";
import { batchPrepared, parseJsonArray, preparedFor } from "../../platform/db";
import { nowIso } from "../../platform/env";
import { logError } from "../../platform/log";
import { turnCredits } from "../../runtime/credits";
import { estimateTokens } from "../../runtime/history";
import { runTurn, type ToolCallSummary, type TurnOutcome } from "../../runtime/turn";
import { preparedMessageAdded } from "../directory";
import { type PendingCall, pendingCalls, toolCallsOfParts } from "./approval-parts";
import { approvalRequests, notifyRequester } from "./approval-requests";
import { awaitApproval, type Resume, replaceMessage } from "./approval-resume";
import { liveFrame } from "./live";
import type { ModelFailure, StoredPart, TurnContextRow } from "./schema";
import {
  appendEvent,
  endTurn,
  eventsAfter,
  insertMessage,
  lastSeq,
  messageById,
  questionWritten,
  setTurnState,
  type TurnRow,
  toMessage,
} from "./store";
import type { RoomHost, RunningTurn, TurnClaim, TurnInput } from "./types";

/** A participant's stop ends the turn within this long, whatever the model call is doing. */
const STOP_GRACE_MS = 1_000;

/**
 * How long a turn's question waits to reach the directory (the conversation's message count and
 * `last_message_at`) with the turn's end, in that one D1 batch; a turn that runs longer writes
 * it on its own, so the lists show the conversation as active.
 */
const QUESTION_WRITE_DELAY_MS = 1_000;

type Start = TurnClaim & {
  input: TurnInput;
  turnId: string;
  position: number;
  context: TurnContextRow;
  /** The turn resumes after its approvals were decided: its next segment. */
  resume?: Resume;
};

const TERMINAL = new Set<UIMessageChunk["type"]>(["finish", "abort"]);

/** Runs a turn inside the room: the model loop, its stream stored event by event, then its end. */
export function runInRoom(room: RoomHost, start: Start): RunningTurn {
  const { turnId } = start;
  const stopper = new AbortController();
  let abandoned = false;
  let stopRequested: (() => void) | null = null;
  const stopped = new Promise<void>((resolve) => {
    stopRequested = resolve;
  });
  const running: RunningTurn = {
    turnId,
    position: start.position,
    seq: start.resume?.seq ?? 0,
    chunks: start.resume ? [...start.resume.chunks] : [],
    followers: new Set(),
    closed: false,
    settled: Promise.resolve(),
    stop: () => {
      stopper.abort(new Error("stopped by a participant"));
      stopRequested?.();
    },
    abandon: () => {
      abandoned = true;
      running.closed = true;
      stopper.abort(new Error("conversation deleted"));
    },
  };
  const emit = (chunk: UIMessageChunk) => {
    if (running.closed) return;
    room.emit(running, chunk);
    if (TERMINAL.has(chunk.type)) running.closed = true;
  };

  const context = start.context;
  let questionWrite: Promise<void> | null = null;
  const questionTimer = setTimeout(() => {
    questionWrite = writeQuestion(room, turnId, context);
  }, QUESTION_WRITE_DELAY_MS);

  running.settled = (async () => {
    let outcome: TurnOutcome | null = null;
    let failure: ModelFailure | null = null;
    const pump = (async () => {
      try {
        setTurnState(room.db, turnId, "streaming");
        const turn = await startModel(room, start, stopper.signal);
        let built: StoredPart[] | undefined;
        const ui = turn.result.toUIMessageStream({
          generateMessageId: () => turnId,
          // A resumed segment continues the message (its `start` carries the same id).
          originalMessages: start.resume ? [start.resume.original] : undefined,
          onError: (error) => modelFailure(room.env, error).message,
          redactToolErrors: false,
          // The reply's parts as the SDK builds them from this stream, for its end (see `settle`).
          onFinish: ({ responseMessage }) => {
            built = responseMessage.parts;
          },
        });
        let whole = true;
        for await (const chunk of ui) {
          if (running.closed) {
            whole = false;
            break;
          }
          emit(chunk);
        }
        if (whole && !stopper.signal.aborted) running.parts = built;
        outcome = await turn.done;
      } catch (error) {
        failure = modelFailure(room.env, error);
        emit({ type: "error", errorText: failure.message });
      }
    })();
    // A stop ends the turn within a second even if the model call does not let go.
    await Promise.race([pump, stopped.then(() => Promise.race([pump, sleep(STOP_GRACE_MS)]))]);
    if (stopper.signal.aborted && !running.closed) emit({ type: "abort" });
    running.closed = true;
    // The whole stream is stored and sent before the turn's end is.
    room.storeEvents(running);
    clearTimeout(questionTimer);
    await questionWrite;
    if (abandoned) return;
    const finish = stopper.signal.aborted ? "stopped" : ((outcome as TurnOutcome | null)?.finish ?? "failed");
    await settle(room, running, {
      context,
      outcome,
      finish,
      failure: failure ?? (outcome as TurnOutcome | null)?.failure ?? null,
    }).catch((e) => logError("room: storing the turn failed", e));
  })().finally(() => {
    room.closeFollowers(running);
    room.finished(running);
  });
  return running;
}

async function startModel(room: RoomHost, start: Start, stopSignal: AbortSignal) {
  const { input, turnId } = start;
  const agent: AgentRecord = input.agent;
  const model = agentLanguageModel(room.env, {
    runtime_profile: input.profile,
    model: input.profile === agent.runtimeProfile ? agent.model : null,
  });
  if (!model) throw new Error("No language model is configured for this service");
  return runTurn({
    env: room.env,
    model,
    profile: input.profile,
    providers: room.toolProviders,
    workspace: input.workspace,
    userId: input.userId,
    agent: { ...toAgentRow(agent), ...input.capabilities },
    conversationId: input.conversationId,
    turnId,
    origin: input.origin,
    history: start.history,
    prompt: input.content,
    stopSignal,
    prefetched: input.prefetched,
    readsStream: true,
    approvals: { required: parseJsonArray(agent.approvalRequired) },
    continuation: start.resume?.continuation,
  });
}

/** The question's side of the directory on its own (the turn's end will not carry it). */
async function writeQuestion(room: RoomHost, turnId: string, context: TurnContextRow): Promise<void> {
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
    logError("room: updating the directory failed", e);
  }
}

type Ending = {
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
async function settle(room: RoomHost, running: RunningTurn, ending: Ending): Promise<void> {
  const { turnId } = running;
  // Built while it streamed when the stream ran whole, else from the events stored (the same chunks).
  const parts = running.parts ?? (await partsOf(running.chunks));
  const streamedText = textOf(parts);
  const segment = ending.context.segment ?? 1;
  const replied = ending.finish !== "failed" && ending.finish !== "interrupted";
  if (!replied && !(ending.finish === "interrupted" && streamedText)) {
    await writeQuestion(room, turnId, ending.context);
    endTurn(room.db, turnId, "failed", ending.failure, nowIso());
    return;
  }
  // Calls held back for a person: the turn waits for their decisions (a stopped turn asks nothing).
  const pending: PendingCall[] = ending.finish === "stopped" ? [] : pendingCalls(parts);
  const reply = replyOf(ending, parts, streamedText);
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
    endTurn(room.db, turnId, "failed", null, nowIso());
    throw error;
  }
  room.ctx.storage.transactionSync(() => {
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
  });
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
function replyOf(ending: Ending, parts: StoredPart[], streamedText: string): Reply {
  const { outcome, context } = ending;
  const complete = ending.finish !== "stopped" && ending.finish !== "interrupted";
  const reported = (outcome?.usage.input_tokens ?? 0) + (outcome?.usage.output_tokens ?? 0) > 0;
  const input = reported ? outcome!.usage.input_tokens : 0;
  const output = reported ? outcome!.usage.output_tokens : estimateTokens(streamedText);
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
  const seq = lastSeq(room.db, turn.id);
  const failure = { status: null, message: "The turn was cut short when its conversation restarted" };
  const error: UIMessageChunk = { type: "error", errorText: failure.message };
  appendEvent(room.db, turn.id, seq + 1, JSON.stringify(error));
  const running: RunningTurn = {
    turnId: turn.id,
    position: turn.position,
    seq: seq + 1,
    chunks: eventsAfter(room.db, turn.id, 0).map((e) => e.chunk),
    followers: new Set(),
    closed: true,
    settled: Promise.resolve(),
    stop: () => undefined,
    abandon: () => undefined,
  };
  await settle(room, running, { context: turn.context, outcome: null, finish: "interrupted", failure });
}

/** The assistant message's parts, as an AI SDK client builds them from the same stream. */
async function partsOf(chunks: UIMessageChunk[]): Promise<StoredPart[]> {
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const c of chunks) controller.enqueue(c);
      controller.close();
    },
  });
  let last: UIMessage | undefined;
  for await (const message of readUIMessageStream({ stream, onError: () => undefined })) last = message;
  return last?.parts ?? [];
}

const textOf = (parts: StoredPart[]) =>
  parts
    .filter((p) => p.type === "text")
    .map((p) => (p as { text: string }).text)
    .join("")
    .trim();

function toolCallsOf(parts: StoredPart[]): ToolCallSummary[] {
  return parts.flatMap((p) =>
    p.type.startsWith("tool-") && "state" in p && (p.state === "output-available" || p.state === "output-error")
      ? [{ name: p.type.slice("tool-".length), ok: p.state === "output-available" }]
      : [],
  );
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
