import { logError } from "../../platform/log";
import { type Decision, type DecisionAnswer, decide } from "./approval-decisions";
import { markResumed, resumeStart } from "./approval-resume";
import { followTurn } from "./follow";
import { awaitingTurn, turnById } from "./store";
import { runInRoom } from "./turn";
import type { Room } from "./types";

/** Takes the decisions, then resumes the turns none of whose approvals is pending any more. */
export async function decideInRoom(
  room: Room,
  conversationId: string,
  workspaceId: string,
  decisions: Decision[],
  stream: boolean,
): Promise<{ answers: DecisionAnswer[]; stream?: ReadableStream<Uint8Array> }> {
  const answers: DecisionAnswer[] = [];
  const touched = new Set<string>();
  for (const decision of decisions) {
    const { answer, turnId } = await decide(room.env, conversationId, workspaceId, decision);
    answers.push(answer);
    if (turnId) touched.add(turnId);
  }
  let resumedAt: { turnId: string; seq: number } | null = null;
  for (const turnId of touched) {
    const seq = await resume(room, turnId);
    if (seq !== null) resumedAt = { turnId, seq };
  }
  if (!stream || !resumedAt) return { answers };
  return { answers, stream: followTurn(room.db, resumedAt.turnId, resumedAt.seq, room.running) };
}

/** The waiting turn goes on if none of its approvals is pending any more; answers once that segment has ended. */
export async function resumeWaiting(room: Room): Promise<void> {
  const waiting = awaitingTurn(room.db);
  if (waiting) await resume(room, waiting.id);
  await room.running?.settled;
}

/** Resumes a waiting turn whose approvals are all decided; answers the sequence number its new segment follows. */
export async function resume(room: Room, turnId: string): Promise<number | null> {
  if (room.running) return null;
  const start = await resumeStart(room, turnId).catch((e: unknown) => {
    logError("room: resuming a turn after its approvals failed", e);
    return null;
  });
  // Two decisions may have got here at once: one resumes.
  if (!start || room.running || turnById(room.db, turnId)?.state !== "awaiting_approval") return null;
  markResumed(room.db, turnId, start.context);
  room.running = runInRoom(room, start);
  await room.keepAlive();
  return start.resume.seq;
}
