import { SSE_DONE, sseEvent } from "./sse";
import { eventTextsAfter, type RoomDb } from "./store";
import type { RunningTurn } from "./types";

/**
 * A turn's stream after `seq`: the stored events, then the live ones while it runs. Reading
 * the stored events and joining the followers happen in one synchronous step, so nothing is
 * missed or sent twice.
 */
export function followTurn(
  db: RoomDb,
  turnId: string,
  seq: number,
  running: RunningTurn | null,
): ReadableStream<Uint8Array> {
  // Events the turn holds unstored (see `emit`) are stored first, so the reader reads them.
  if (running?.turnId === turnId) running.store();
  const live = running?.turnId === turnId && !running.closed ? running : null;
  let follower: ReadableStreamDefaultController<Uint8Array> | null = null;
  return new ReadableStream<Uint8Array>({
    start: (controller) => {
      for (const e of eventTextsAfter(db, turnId, seq)) controller.enqueue(sseEvent(turnId, e.seq, e.json));
      if (live) {
        follower = controller;
        live.followers.add(controller);
      } else {
        controller.enqueue(SSE_DONE);
        controller.close();
      }
    },
    cancel: () => {
      if (follower) live?.followers.delete(follower);
    },
  });
}
