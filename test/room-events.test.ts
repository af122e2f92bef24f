import { describe, expect, it } from "vitest";
import { followTurn } from "../src/conversations/room/follow";
import { eventsAfter } from "../src/conversations/room/store";
import { delta, inRoom, runningTurn } from "./support/rooms";
import { unique } from "./support/unique";

// A turn's stream events are stored a task's worth at a time ("events persisted with their
// sequence as they stream"); a reader who resumes between two stores still gets every event
// once, in order ("replays from SQL and then follows live, with no gap and no duplicate").

async function read(stream: ReadableStream<Uint8Array>): Promise<string> {
  return new Response(stream).text();
}

describe("a turn's stream events, stored together", () => {
  it("holds the events of one task until it is done, then stores them in one go before sending them", async () => {
    const turnId = unique();
    await inRoom(`room-events-${unique()}`, async (room) => {
      const turn = runningTurn(turnId, room);
      room.running = turn;
      const sent: Uint8Array[] = [];
      turn.followers.add({ enqueue: (b: Uint8Array) => sent.push(b) } as never);
      room.emit(turn, { type: "start" });
      room.emit(turn, delta("a"));
      // Nothing stored, nothing sent yet.
      expect(eventsAfter(room.db, turnId, 0)).toHaveLength(0);
      expect(sent).toHaveLength(0);
      room.storeEvents(turn);
      expect(eventsAfter(room.db, turnId, 0).map((e) => e.seq)).toEqual([1, 2]);
      expect(sent).toHaveLength(2);
      // The timer the first emit set finds nothing left to store.
      await new Promise((resolve) => setTimeout(resolve, 5));
      expect(eventsAfter(room.db, turnId, 0)).toHaveLength(2);
      room.running = null;
    });
  });

  it("a reader resuming between two stores gets every event after its position once, in order", async () => {
    const turnId = unique();
    const body = await inRoom(`room-events-${unique()}`, async (room) => {
      const turn = runningTurn(turnId, room);
      room.running = turn;
      room.emit(turn, { type: "start" });
      room.emit(turn, delta("a"));
      room.storeEvents(turn);
      room.emit(turn, delta("b"));
      room.emit(turn, delta("c"));
      // Events 3 and 4 are not stored yet: the reader left after event 1.
      const stream = followTurn(room.db, turnId, 1, turn);
      const text = read(stream);
      room.storeEvents(turn);
      room.emit(turn, { type: "finish" });
      room.closeFollowers(turn);
      room.running = null;
      return text;
    });
    const ids = [...body.matchAll(/^id: (.+)$/gm)].map((m) => m[1]);
    expect(ids).toEqual([`${turnId}:2`, `${turnId}:3`, `${turnId}:4`, `${turnId}:5`]);
    expect(body.endsWith("data: [DONE]\n\n")).toBe(true);
    const deltas = [...body.matchAll(/"delta":"(\w)"/g)].map((m) => m[1]).join("");
    expect(deltas).toBe("abc");
  });

  it("stores nothing for a turn whose conversation was deleted meanwhile", async () => {
    const turnId = unique();
    await inRoom(`room-events-${unique()}`, async (room) => {
      const turn = runningTurn(turnId, room);
      room.running = turn;
      room.emit(turn, { type: "start" });
      room.running = null; // as `destroy` leaves it
      room.storeEvents(turn);
      expect(eventsAfter(room.db, turnId, 0)).toHaveLength(0);
    });
  });
});
