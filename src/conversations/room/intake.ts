import { hash } from "node:crypto";
import { nowIso } from "../../platform/env";
import { newId } from "../../platform/ids";
import { claimNewMessage, claimRegeneration } from "./claims";
import { followTurn } from "./follow";
import { liveFrame } from "./live";
import { resume } from "./resumption";
import type { TurnContextRow } from "./schema";
import {
  awaitingTurn,
  insertTurn,
  lastTurnOn,
  messageById,
  type RoomDb,
  releaseStaleKey,
  type TurnRow,
  toMessage,
  turnById,
  turnByKey,
} from "./store";
import { runInRoom } from "./turn";
import type { Room, TurnAnswer, TurnInput } from "./types";

/** What an idempotency key was first used for: the content and the agent asked. */
const requestDigest = (input: TurnInput) => hash("sha256", JSON.stringify([input.content, input.agent.id]), "hex");

/** The turn a key started within 24 h, if one did (a key older than that is free again). */
function earlierTurn(d: RoomDb, idempotencyKey: string, now: number) {
  releaseStaleKey(d, idempotencyKey, now);
  return turnByKey(d, idempotencyKey, now);
}

/** Why no new turn starts now, if one does not: no credits, a turn runs, or one waits for approvals. */
function refusal(room: Room, input: TurnInput, now: number): TurnAnswer | null {
  if (!input.hasCredits) return { kind: "no_credits" };
  if (room.running) return { kind: "busy" };
  const waiting = awaitingTurn(room.db);
  if (waiting) {
    const expiresAt = waiting.context.approvalExpiresAt;
    if (!expiresAt || Date.parse(expiresAt) > now) return { kind: "approval_pending" };
    // Its approvals have expired: they count as denied, and the turn ends (this message waits for it).
    room.ctx.waitUntil(resume(room, waiting.id));
    return { kind: "busy" };
  }
  if (input.userMessageId && !input.regenerate && messageById(room.db, input.userMessageId))
    return { kind: "key_reused" };
  return null;
}

const turnContext = (input: TurnInput): TurnContextRow => ({
  workspaceId: input.workspace.id,
  actor: input.actor,
  agentId: input.agent.id,
  model: input.agent.model,
  profile: input.profile,
  userId: input.userId,
  workspaceName: input.workspace.name,
  origin: input.origin,
});

/**
 * The question and the turn are stored together, or neither is (null: nothing to regenerate);
 * the heartbeat alarm is set in the same commit.
 */
function claimTurn(
  room: Room,
  input: TurnInput,
  turn: { turnId: string; context: TurnContextRow; requestHash: string | null },
) {
  return room.ctx.storage.transactionSync(() => {
    const claimed = input.regenerate ? claimRegeneration(room.db) : claimNewMessage(room.db, input);
    if (!claimed) return null;
    const at = nowIso();
    turn.context.question = { added: claimed.messagesAdded, at };
    const position = insertTurn(room.db, {
      id: turn.turnId,
      userMessageId: claimed.userMessageId,
      state: "accepted",
      idempotencyKey: input.idempotencyKey,
      requestHash: turn.requestHash,
      context: turn.context,
      startedAt: at,
    });
    return { ...claimed, position, heartbeat: room.keepAlive() };
  });
}

/** Starts a turn, or answers an idempotent repeat of one (see `ConversationRoomObject.startTurn`). */
export async function startTurn(room: Room, input: TurnInput): Promise<TurnAnswer> {
  // Only a restart leaves turns that no code runs: once per instance (the alarm looks too). A
  // search under way ends first, so a cut-short reply keeps its place before the new question.
  if (!room.recovered || room.recovering) await room.recoverInterrupted();
  // From here to the claim nothing awaits: of two requests, one starts the turn and the
  // other sees it (as a repeat of its key, or as the turn in progress).
  const now = Date.now();
  const requestHash = input.idempotencyKey ? requestDigest(input) : null;
  const earlier = input.idempotencyKey ? earlierTurn(room.db, input.idempotencyKey, now) : undefined;
  if (earlier)
    return earlier.requestHash === requestHash ? answerRepeat(room, earlier, input.stream) : { kind: "key_reused" };
  const refused = refusal(room, input, now);
  if (refused) return refused;
  const turnId = newId();
  const context = turnContext(input);
  const claim = claimTurn(room, input, { turnId, context, requestHash });
  if (!claim) return { kind: "nothing_to_regenerate" };
  if (!input.regenerate)
    room.broadcast(() =>
      liveFrame.message(toMessage(input.conversationId, messageById(room.db, claim.userMessageId)!)),
    );
  room.running = runInRoom(room, { input: { ...input, content: claim.prompt }, turnId, context, ...claim });
  await claim.heartbeat;
  return answerFor(room, turnId, input.stream);
}

/** The stream of a turn from its start (or the stored reply, once it has ended). */
async function answerFor(room: Room, turnId: string, stream: boolean): Promise<TurnAnswer> {
  if (stream) return { kind: "stream", turnId, stream: followTurn(room.db, turnId, 0, room.running) };
  if (room.running?.turnId === turnId) await room.running.settled;
  const ended = turnById(room.db, turnId);
  if (!ended) return { kind: "gone" };
  const reply = messageById(room.db, ended.id);
  const userMessage = messageById(room.db, ended.userMessageId);
  if (!reply || !userMessage) return ended.failure ? { kind: "failed", failure: ended.failure } : { kind: "error" };
  const conversationId = room.conversationId;
  return {
    kind: "reply",
    userMessage: toMessage(conversationId, userMessage),
    reply: toMessage(conversationId, reply),
  };
}

/**
 * A repeat's answer: that of the turn answering its question now, which is a regeneration's
 * when one has replaced the first turn's reply since.
 */
function answerRepeat(room: Room, earlier: TurnRow, stream: boolean): Promise<TurnAnswer> {
  const answering = lastTurnOn(room.db, earlier.userMessageId) ?? earlier;
  return answerFor(room, answering.id, stream);
}
