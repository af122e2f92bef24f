import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { followTurn } from "../src/conversations/room/follow";
import { KEEP_ALIVE_MS, UNREAD_EVENTS_MS } from "../src/conversations/room/object";
import { eventsAfter, turnById } from "../src/conversations/room/store";
import { TurnResponseSchema } from "../src/conversations/schemas";
import { parse } from "./support/api";
import { conversationOf, delta, inRoom, postMessage, REPLY, roomStub, runningTurn } from "./support/rooms";
import { scriptedModels } from "./support/scripted-llm";
import { signupWorkspace } from "./support/seed";
import { unique } from "./support/unique";

// What a turn writes to its room's storage, and when: every write is a commit, so a turn that
// nobody reads stores its events with its end, and turns one after another share a heartbeat.
// None of it may cost a reader an event ("No gap, no duplicate") or a restart its turn ("an
// alarm continues or fails it after an eviction").

const { script } = scriptedModels();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("the events of a turn nobody reads", () => {
  it("wait unstored, and a reader who comes has them stored before it reads: every event once", async () => {
    const turnId = unique();
    const body = await inRoom(`room-storage-${unique()}`, async (room) => {
      const turn = runningTurn(turnId, room);
      room.running = turn;
      room.emit(turn, { type: "start" });
      room.emit(turn, delta("a"));
      // Nobody reads: a task later they are still held (for up to UNREAD_EVENTS_MS).
      await sleep(5);
      expect(eventsAfter(room.db, turnId, 0)).toHaveLength(0);
      const text = new Response(followTurn(room.db, turnId, 0, turn)).text();
      // The reader's arrival stored them.
      expect(eventsAfter(room.db, turnId, 0).map((e) => e.seq)).toEqual([1, 2]);
      // From now on someone reads: the next events are stored once their task is done.
      room.emit(turn, delta("b"));
      await sleep(5);
      expect(eventsAfter(room.db, turnId, 0).map((e) => e.seq)).toEqual([1, 2, 3]);
      room.emit(turn, { type: "finish" });
      turn.closed = true;
      room.closeFollowers(turn);
      room.running = null;
      return text;
    });
    const ids = [...body.matchAll(/^id: (.+)$/gm)].map((m) => m[1]);
    expect(ids).toEqual([1, 2, 3, 4].map((seq) => `${turnId}:${seq}`));
  });

  it("are stored within UNREAD_EVENTS_MS while the turn runs, so a restart keeps most of its text", async () => {
    const turnId = unique();
    await inRoom(`room-storage-${unique()}`, async (room) => {
      const turn = runningTurn(turnId, room);
      room.running = turn;
      room.emit(turn, { type: "start" });
      await sleep(UNREAD_EVENTS_MS + 50);
      expect(eventsAfter(room.db, turnId, 0).map((e) => e.seq)).toEqual([1]);
      room.running = null;
    });
  });

  it("are stored with the turn's end when it ends first, and the whole stream replays", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ text: REPLY });
    const turn = await parse(await postMessage(ws.adminToken, c.id, "hello"), TurnResponseSchema);
    const stored = await inRoom(c.id, (room) => ({
      chunks: eventsAfter(room.db, turn.reply.id, 0).map((e) => e.chunk),
      state: turnById(room.db, turn.reply.id)?.state,
    }));
    expect(stored.state).toBe("completed");
    expect(stored.chunks.at(0)?.type).toBe("start");
    expect(stored.chunks.at(-1)?.type).toBe("finish");
    const text = stored.chunks.flatMap((x) => (x.type === "text-delta" ? [x.delta] : [])).join("");
    expect(text).toBe(REPLY);
  });
});

describe("a turn's state", () => {
  it("is `accepted` until the model's first events are stored, then `streaming`", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ text: REPLY, delayMs: 400 });
    const posted = postMessage(ws.adminToken, c.id, "wait for it");
    const stateOf = () =>
      inRoom(c.id, (room) => (room.running ? turnById(room.db, room.running.turnId)?.state : undefined));
    let state: string | undefined;
    while (!state) state = await stateOf();
    expect(state).toBe("accepted");
    // A reader comes: the events are stored as they come, and the first ones mark it streaming.
    const stream = await roomStub(c.id).stream(c.id, ws.workspace.id, null);
    const reader = stream!.getReader();
    await reader.read();
    expect(await stateOf()).toBe("streaming");
    await reader.cancel();
    expect((await posted).status).toBe(200);
  });
});

describe("the heartbeat alarm", () => {
  it("is set once for turns one after another, and set again once it has fired", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    const alarm = () => inRoom(c.id, (room) => room.ctx.storage.getAlarm());
    script({ text: "One." }, { text: "Two." }, { text: "Three." });
    const before = Date.now();
    expect((await postMessage(ws.adminToken, c.id, "one")).status).toBe(200);
    const first = await alarm();
    expect(first).toBeGreaterThanOrEqual(before + KEEP_ALIVE_MS);
    expect((await postMessage(ws.adminToken, c.id, "two")).status).toBe(200);
    expect(await alarm()).toBe(first);
    // It fires with no turn running: the room keeps its events' expiry as the next alarm.
    expect(await runDurableObjectAlarm(roomStub(c.id))).toBe(true);
    expect(await alarm()).toBeGreaterThan(Date.now() + KEEP_ALIVE_MS);
    const third = Date.now();
    expect((await postMessage(ws.adminToken, c.id, "three")).status).toBe(200);
    const rearmed = await alarm();
    expect(rearmed).toBeGreaterThanOrEqual(third + KEEP_ALIVE_MS);
    expect(rearmed).toBeLessThanOrEqual(Date.now() + KEEP_ALIVE_MS);
  });
});

describe("a room's turns", () => {
  it("are found by state through an index (the intake's waiting turn, a restart's running ones), not read one by one", async () => {
    const plans = await inRoom(`room-storage-${unique()}`, (room) => {
      const plan = (query: string, ...values: string[]) =>
        room.ctx.storage.sql
          .exec<{ detail: string }>(`EXPLAIN QUERY PLAN ${query}`, ...values)
          .toArray()
          .map((r) => r.detail)
          .join("; ");
      return {
        awaiting: plan("SELECT * FROM turns WHERE state = ? LIMIT 1", "awaiting_approval"),
        running: plan("SELECT * FROM turns WHERE state IN (?, ?)", "accepted", "streaming"),
      };
    });
    expect(plans.awaiting).toMatch(/USING INDEX turns_state_idx/);
    expect(plans.running).toMatch(/USING INDEX turns_state_idx/);
  });
});
