import type { UIMessageChunk } from "ai";
import { type AgentRecord, toAgentRow } from "../../agents/service";
import { modelFailure } from "../../llm/errors";
import { agentLanguageModel } from "../../llm/model";
import { parseJsonArray } from "../../platform/db";
import { logError } from "../../platform/log";
import { runTurn, type TurnOutcome } from "../../runtime/turn";
import type { Resume } from "./approval-resume";
import type { ModelFailure, StoredPart, TurnContextRow } from "./schema";
import { settle, writeQuestion } from "./settle";
import type { RoomHost, RunningTurn, TurnClaim, TurnInput } from "./types";
import { uiChunkMapper } from "./ui-chunks";

// The room loads this module for its turns; a restart's cut-short turns end through it too.
export { settleInterrupted } from "./settle";

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
    store: () => room.storeEvents(running),
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
        const turn = await startModel(room, start, stopper.signal);
        const onError = (error: unknown) => modelFailure(room.env, error).message;
        if (start.resume) {
          // A resumed segment continues its message: the SDK builds its parts on the stored
          // ones (the approvals' answers), while it streams.
          let built: StoredPart[] | undefined;
          const ui = turn.result.toUIMessageStream({
            generateMessageId: () => turnId,
            originalMessages: [start.resume.original],
            onError,
            redactToolErrors: false,
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
        } else {
          // A new reply's parts are built from its events when it ends (see `settle`).
          const toChunk = uiChunkMapper(turn.tools, { messageId: turnId, onError });
          for await (const part of turn.result.stream) {
            if (running.closed) break;
            const chunk = toChunk(part);
            if (chunk) emit(chunk);
          }
        }
        outcome = await turn.done;
      } catch (error) {
        failure = modelFailure(room.env, error);
        emit({ type: "error", errorText: failure.message });
      }
    })();
    // A stop ends the turn within a second even if the model call does not let go.
    await Promise.race([pump, stopped.then(() => Promise.race([pump, sleep(STOP_GRACE_MS)]))]);
    // Decided now: a stop that comes while the end below is written finds the answer whole.
    const wasStopped = stopper.signal.aborted;
    if (wasStopped && !running.closed) emit({ type: "abort" });
    running.closed = true;
    // A reader gets the whole stream before the turn's end is written; nobody's is stored with the end.
    if (room.watched(running)) room.storeEvents(running);
    clearTimeout(questionTimer);
    await questionWrite;
    if (abandoned) return;
    const finish = wasStopped ? "stopped" : ((outcome as TurnOutcome | null)?.finish ?? "failed");
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

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
