import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { UIMessageChunk } from "ai";
import { describe, expect, it, vi } from "vitest";
import { followTurn } from "../src/conversations/room/follow";
import { TurnResponseSchema } from "../src/conversations/schemas";
import { estimateTokens } from "../src/runtime/history";
import { requireApprovalOf } from "./support/agents";
import { call, parse } from "./support/api";
import { auditEvents } from "./support/audit";
import { eventually } from "./support/browser";
import { usageEntries } from "./support/ledger";
import {
  conversationOf,
  delta,
  expectCutShortEnded,
  expectNextTurnRuns,
  inRoom,
  postMessage,
  REPLY,
  roomMessages,
  roomStub,
  runningTurn,
  streaming,
  turnStates,
} from "./support/rooms";
import { scriptedModels } from "./support/scripted-llm";
import { signupWorkspace } from "./support/seed";
import { unique } from "./support/unique";

// Edges of the ConversationRoom's contract: "No gap, no duplicate", "billing, audit event and
// directory update happen once, at its end", and "Deleting or erasing a conversation deletes
// the room's storage".

const { script } = scriptedModels();

const roomRows = (id: string) =>
  inRoom(id, (room) => ({
    messages: room.ctx.storage.sql.exec("SELECT count(*) AS n FROM messages").one().n,
    events: room.ctx.storage.sql.exec("SELECT count(*) AS n FROM stream_events").one().n,
    turns: room.ctx.storage.sql.exec("SELECT count(*) AS n FROM turns").one().n,
    meta: room.ctx.storage.sql.exec("SELECT count(*) AS n FROM meta").one().n,
  }));

const messageCount = async (conversationId: string) =>
  (await env.DB.prepare("SELECT message_count AS n FROM conversations WHERE id = ?1")
    .bind(conversationId)
    .first<{ n: number }>())!.n;

/** A turn cut short as an eviction leaves it: stored as running, part of its text streamed, no code running it. */
async function orphanedTurn() {
  const ws = await signupWorkspace();
  const c = await conversationOf(ws.adminToken);
  script({ text: REPLY, wordDelayMs: 40 });
  const res = await postMessage(ws.adminToken, c.id, "count", streaming);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  while ((seen.match(/text-delta/g) ?? []).length < 3) seen += (await reader.read()).value ?? "";
  await inRoom(c.id, (room) => {
    const turn = room.running!;
    room.running = null;
    turn.abandon();
    // A new instance has not looked for cut-short turns yet.
    room.recovered = false;
  });
  await reader.cancel();
  return { ws, c };
}

describe("the stream at the boundary between stored and live events", () => {
  // "With Last-Event-ID … only the events after it … No gap, no duplicate."
  it("a reader joining after the turn's `finish` was emitted but before it was stored still gets it", async () => {
    const turnId = unique();
    const body = await inRoom(`room-edges-${unique()}`, async (room) => {
      const turn = runningTurn(turnId, room);
      room.running = turn;
      room.emit(turn, { type: "start" });
      room.emit(turn, delta("a"));
      room.storeEvents(turn);
      room.emit(turn, delta("b"));
      room.emit(turn, { type: "finish" });
      // What the running turn does on its terminal chunk (turn.ts): the stream is over.
      turn.closed = true;
      const text = new Response(followTurn(room.db, turnId, 1, turn)).text();
      room.storeEvents(turn);
      room.closeFollowers(turn);
      room.running = null;
      return text;
    });
    const ids = [...body.matchAll(/^id: (.+)$/gm)].map((m) => m[1]);
    expect(ids).toEqual([`${turnId}:2`, `${turnId}:3`, `${turnId}:4`]);
    expect(body).toContain('"type":"finish"');
    expect(body.endsWith("data: [DONE]\n\n")).toBe(true);
  });
});

describe("resume positions that are not the running turn's", () => {
  it("a position past the running turn's last event is 204, as past an ended turn's; another conversation's turn is 204", async () => {
    const ws = await signupWorkspace();
    const [a, b] = [await conversationOf(ws.adminToken), await conversationOf(ws.adminToken)];
    script({ text: REPLY, wordDelayMs: 30 });
    const first = (await postMessage(ws.adminToken, a.id, "count", streaming)).body!.pipeThrough(
      new TextDecoderStream(),
    );
    const reader = first.getReader();
    let seen = "";
    while (!seen.includes("\n\n")) seen += (await reader.read()).value ?? "";
    const turnId = (await turnStates(a.id))[0]!.id;
    // A turn of conversation a named on conversation b's stream.
    const elsewhere = await call("GET", `/v1/api/conversations/${b.id}/stream?after=${turnId}:0`, {
      token: ws.adminToken,
    });
    expect(elsewhere.status).toBe(204);
    const ahead = await call("GET", `/v1/api/conversations/${a.id}/stream?after=${turnId}:40`, {
      token: ws.adminToken,
    });
    // As for an ended turn: nothing is known after a position past its last event.
    expect(ahead.status).toBe(204);
    expect(await ahead.text()).toBe("");
    // A real position still follows live.
    const resumed = await call("GET", `/v1/api/conversations/${a.id}/stream?after=${turnId}:1`, {
      token: ws.adminToken,
    });
    const body = await resumed.text();
    await reader.cancel();
    const seqs = [...body.matchAll(/^id: [^:]+:(\d+)$/gm)].map((m) => Number(m[1]));
    expect(seqs[0]).toBe(2);
    expect(seqs).toEqual(seqs.map((_, i) => i + 2));
  });
});

describe("stop", () => {
  // "the model call is aborted within 1 s, the partial reply is kept with `stopped: true` and
  // billed for the tokens used" — also when the model has said nothing yet.
  it("ends a turn whose model never answers within a second: stopped, billed 1 credit, the stream ends with abort", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ text: "Too late.", delayMs: 3_000 });
    const res = await postMessage(ws.adminToken, c.id, "hello?", streaming);
    const started = Date.now();
    const stop = await call("POST", `/v1/api/conversations/${c.id}/stop`, { token: ws.adminToken });
    expect(Date.now() - started).toBeLessThan(1_500);
    const stopped = (await stop.json()) as { turn_id: string; state: string };
    expect(stopped.state).toBe("stopped");
    const body = await res.text();
    expect(body).toMatch(/"type":"abort"[^\n]*\n\ndata: \[DONE\]\n\n$/);
    const [, reply] = await roomMessages(c.id);
    expect(reply).toMatchObject({ id: stopped.turn_id, stopped: true, content: "", credits: 1 });
    expect(await usageEntries(ws.workspace.id)).toEqual([{ amount: -1, reference: stopped.turn_id }]);
    expect(await auditEvents(ws.workspace.id, "conversation.turn")).toMatchObject([{ details: { finish: "stopped" } }]);
    // The model's late answer changes nothing.
    await new Promise((r) => setTimeout(r, 2_500));
    expect(await roomMessages(c.id)).toHaveLength(2);
    expect((await turnStates(c.id)).map((t) => t.state)).toEqual(["stopped"]);
  });
});

describe("a stop racing the turn's natural end", () => {
  it("a stop that arrives once the model has answered whole leaves the turn completed, not stopped", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ text: REPLY, wordDelayMs: 100 });
    const reader = (await postMessage(ws.adminToken, c.id, "count", streaming))
      .body!.pipeThrough(new TextDecoderStream())
      .getReader();
    let seen = (await reader.read()).value ?? "";
    // The turn's question reaches the directory on its own after a second: held here, so the
    // stop comes after the model's answer and before the turn's end is stored.
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const held = await inRoom(c.id, (room) => {
      const batch = room.env.DB.batch.bind(room.env.DB);
      return vi.spyOn(room.env.DB, "batch").mockImplementation(async (statements) => {
        if (statements.length === 2) await gate;
        return batch(statements);
      });
    });
    while (!seen.includes('"type":"finish"')) seen += (await reader.read()).value ?? "";
    await new Promise((r) => setTimeout(r, 200));
    const stop = call("POST", `/v1/api/conversations/${c.id}/stop`, { token: ws.adminToken });
    await new Promise((r) => setTimeout(r, 100));
    release();
    const answered = (await (await stop).json()) as { turn_id: string; state: string };
    held.mockRestore();
    while (!seen.endsWith("data: [DONE]\n\n")) seen += (await reader.read()).value ?? "";
    expect(seen).not.toContain('"type":"abort"');
    expect(answered.state).toBe("completed");
    const [, reply] = await roomMessages(c.id);
    expect(reply).toMatchObject({ id: answered.turn_id, stopped: false, content: REPLY });
    const [event] = await auditEvents(ws.workspace.id, "conversation.turn");
    expect(event!.details).toMatchObject({ finish: "answered" });
    expect(await usageEntries(ws.workspace.id)).toHaveLength(1);
  });
});

describe("idempotent intake", () => {
  // "A repeat with the same key within 24 h runs and bills nothing new"
  it("a key older than 24 hours starts a new turn, billed on its own", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ text: "Fresh." });
    const key = { "Idempotency-Key": "daily" };
    const first = await parse(await postMessage(ws.adminToken, c.id, "hi", key), TurnResponseSchema);
    await inRoom(c.id, (room) => {
      room.ctx.storage.sql.exec("UPDATE turns SET started_at = ?", new Date(Date.now() - 25 * 3600_000).toISOString());
    });
    const second = await parse(await postMessage(ws.adminToken, c.id, "hi", key), TurnResponseSchema);
    expect(second.reply.id).not.toBe(first.reply.id);
    expect((await usageEntries(ws.workspace.id)).map((e) => e.reference).sort()).toEqual(
      [first.reply.id, second.reply.id].sort(),
    );
    // The key now answers the new turn.
    const again = await parse(await postMessage(ws.adminToken, c.id, "hi", key), TurnResponseSchema);
    expect(again.reply.id).toBe(second.reply.id);
    expect(await roomMessages(c.id)).toHaveLength(4);
  });
});

describe("a room restarted mid-turn", () => {
  // "billing, audit event and directory update happen once, at its end"
  it("the alarm and a new message looking for the cut-short turn at once end it once: one event, one count", async () => {
    const { ws, c } = await orphanedTurn();
    await inRoom(c.id, async (room) => {
      // A message's intake looks first (its D1 batch in flight), then the keep-alive alarm fires.
      await Promise.all([room.recoverInterrupted(), room.alarm()]);
    });
    expect((await turnStates(c.id)).map((t) => t.state)).toEqual(["failed"]);
    const [, partial] = await roomMessages(c.id);
    expect(partial!.content.length).toBeGreaterThan(0);
    expect(await usageEntries(ws.workspace.id)).toHaveLength(1);
    expect(await auditEvents(ws.workspace.id, "conversation.turn")).toHaveLength(1);
    // The question and the partial reply.
    expect(await messageCount(c.id)).toBe(2);
    // One error event closes its stream.
    const errors = await inRoom(c.id, (room) =>
      room.ctx.storage.sql.exec("SELECT count(*) AS n FROM stream_events WHERE chunk LIKE '%\"error\"%'").one(),
    );
    expect(errors.n).toBe(1);
  });
});

describe("conversations from before rooms", () => {
  it("a copy from D1 that fails is tried again by the next request, not answered as that failure for good", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    await env.DB.prepare(
      `INSERT INTO messages (id, conversation_id, workspace_id, role, author_user_id, content, created_at)
       VALUES (?1, ?2, ?3, 'user', ?4, 'old question', ?5)`,
    )
      .bind(`old-${unique()}`, c.id, ws.workspace.id, ws.user.id, new Date().toISOString())
      .run();
    const first = await inRoom(c.id, async (room) => {
      const outage = vi.spyOn(room.env.DB, "prepare").mockImplementation(() => {
        throw new Error("D1_ERROR: simulated outage");
      });
      const answer = await room.messages(c.id, ws.workspace.id).then(
        () => "answered",
        () => "failed",
      );
      outage.mockRestore();
      return answer;
    });
    expect(first).toBe("failed");
    const read = await call("GET", `/v1/api/conversations/${c.id}`, { token: ws.adminToken });
    expect(read.status).toBe(200);
    expect(((await read.json()) as { messages: { content: string }[] }).messages.map((m) => m.content)).toEqual([
      "old question",
    ]);
  });
});

describe("a message while a cut-short turn is being ended", () => {
  it("waits for that end: the partial reply stays before the new question, and is in the new turn's history", async () => {
    const { ws, c } = await orphanedTurn();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const held = await inRoom(c.id, (room) => {
      const batch = room.env.DB.batch.bind(room.env.DB);
      const spy = vi.spyOn(room.env.DB, "batch").mockImplementation(async (statements) => {
        if (statements.length > 2) await gate;
        return batch(statements);
      });
      // The alarm's search: the cut-short turn's end waits on D1.
      room.ctx.waitUntil(room.alarm());
      return spy;
    });
    const model = script({ text: "Back again." });
    const next = postMessage(ws.adminToken, c.id, "again");
    await new Promise((r) => setTimeout(r, 200));
    release();
    const answered = await parse(await next, TurnResponseSchema);
    held.mockRestore();
    expect(answered.reply.content).toBe("Back again.");
    const messages = await roomMessages(c.id);
    expect(messages.map((m) => [m.role, m.role === "user" ? m.content : m.stopped])).toEqual([
      ["user", "count"],
      ["assistant", false],
      ["user", "again"],
      ["assistant", false],
    ]);
    const history = model.requests[0]!.messages.filter((m) => m.role !== "system").map((m) => m.role);
    expect(history).toEqual(["user", "assistant", "user"]);
  });
});

describe("a room restarted after a turn's stream ended, before its end was stored", () => {
  // "no event follows the stream's `finish`"
  it("ends the turn without adding an event after its `finish`", async () => {
    const { c } = await orphanedTurn();
    const turnId = await inRoom(c.id, (room) => {
      const [turn] = room.ctx.storage.sql.exec<{ id: string }>("SELECT id FROM turns").toArray();
      const { n } = room.ctx.storage.sql
        .exec<{ n: number }>("SELECT max(seq) AS n FROM stream_events WHERE turn_id = ?", turn!.id)
        .one();
      room.ctx.storage.sql.exec(
        "INSERT INTO stream_events (turn_id, seq, chunk) VALUES (?, ?, ?)",
        turn!.id,
        n + 1,
        JSON.stringify({ type: "finish" }),
      );
      return turn!.id;
    });
    expect(await runDurableObjectAlarm(roomStub(c.id))).toBe(true);
    expect((await turnStates(c.id)).map((t) => t.state)).not.toContain("streaming");
    const last = await inRoom(c.id, (room) =>
      room.ctx.storage.sql
        .exec<{ chunk: string }>("SELECT chunk FROM stream_events WHERE turn_id = ? ORDER BY seq DESC LIMIT 1", turnId)
        .one(),
    );
    expect(JSON.parse(last.chunk)).toEqual({ type: "finish" });
  });
});

describe("the alarm after a restart", () => {
  // "an alarm continues or fails it after an eviction, it never hangs as "in progress""
  it("ends the cut-short turn as failed, partial text kept and billed once, before any request names the room", async () => {
    const { ws, c } = await orphanedTurn();
    await inRoom(c.id, (room) => {
      // A new instance: it knows its conversation only from its storage until a request comes.
      (room as unknown as { identity: unknown }).identity = null;
    });
    expect(await runDurableObjectAlarm(roomStub(c.id))).toBe(true);
    await expectCutShortEnded(ws.workspace.id, c.id);
    expect(await auditEvents(ws.workspace.id, "conversation.turn")).toHaveLength(1);
    expect(await messageCount(c.id)).toBe(2);
    await expectNextTurnRuns(ws.adminToken, c.id, script);
  });
});

describe("stream events of a turn waiting for approvals", () => {
  // "the events of a conversation's last 20 turns stay readable for 24 h. No gap, no duplicate."
  // and a resumed turn's "replay from the turn's start shows both segments" (its numbers go on).
  it("are kept while it waits longer than 24 hours, so its resumed segment numbers on and replays whole", async () => {
    const ws = await signupWorkspace();
    await requireApprovalOf(ws.adminToken, ["deliver_file"]);
    const c = await conversationOf(ws.adminToken);
    script({ tool: "deliver_file", args: { name: "plan.md", content: "the plan" } }, { text: "Delivered." });
    const paused = await (await postMessage(ws.adminToken, c.id, "Write the plan to a file", streaming)).text();
    const firstSeqs = [...paused.matchAll(/^id: [^:]+:(\d+)$/gm)].map((m) => Number(m[1]));
    expect((await turnStates(c.id)).map((t) => t.state)).toEqual(["awaiting_approval"]);
    // A day and more later, the room's alarm has run meanwhile.
    await inRoom(c.id, (room) => {
      room.ctx.storage.sql.exec("UPDATE turns SET ended_at = ?", new Date(Date.now() - 25 * 3600_000).toISOString());
    });
    expect(await runDurableObjectAlarm(roomStub(c.id))).toBe(true);
    const { approvals } = (await (await call("GET", "/v1/api/approvals", { token: ws.adminToken })).json()) as {
      approvals: { id: string; turn_id: string }[];
    };
    const decided = await call("POST", `/v1/api/conversations/${c.id}/approvals/${approvals[0]!.id}`, {
      token: ws.adminToken,
      body: { approved: true },
    });
    expect(decided.status).toBe(202);
    await eventually(async () => (await turnStates(c.id))[0]!.state === "completed");
    const replay = await (
      await call("GET", `/v1/api/conversations/${c.id}/stream?after=${approvals[0]!.turn_id}:0`, {
        token: ws.adminToken,
      })
    ).text();
    // Each position names one event: the first segment's come back as they were sent, then the new ones.
    expect(replay.startsWith(paused.replace(/data: \[DONE\]\n\n$/, ""))).toBe(true);
    const seqs = [...replay.matchAll(/^id: [^:]+:(\d+)$/gm)].map((m) => Number(m[1]));
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    expect(seqs.length).toBeGreaterThan(firstSeqs.length);
  });
});

describe("a resumed turn cut short in its second segment", () => {
  // "Each segment of a turn that waited for approvals is billed once"; a cut-short segment "billed
  // for the tokens used": its own text, not the first segment's again.
  it("is billed for the text it streamed itself", async () => {
    const ws = await signupWorkspace();
    await requireApprovalOf(ws.adminToken, ["deliver_file"]);
    const c = await conversationOf(ws.adminToken);
    script({ tool: "deliver_file", args: { name: "plan.md", content: "the plan" } }, { text: REPLY, wordDelayMs: 150 });
    await (await postMessage(ws.adminToken, c.id, "Write the plan to a file", streaming)).text();
    // The first segment said something before its tool call, as models do.
    const FIRST = "I will write the plan to a file for you, once you approve it. ".repeat(20).trim();
    const turnId = await inRoom(c.id, (room) => {
      const [turn] = room.ctx.storage.sql.exec<{ id: string }>("SELECT id FROM turns").toArray();
      const seq = room.ctx.storage.sql
        .exec<{ n: number }>("SELECT max(seq) AS n FROM stream_events WHERE turn_id = ?", turn!.id)
        .one().n;
      for (const [i, chunk] of [
        { type: "text-start", id: "said" },
        { type: "text-delta", id: "said", delta: FIRST },
        { type: "text-end", id: "said" },
      ].entries())
        room.ctx.storage.sql.exec(
          "INSERT INTO stream_events (turn_id, seq, chunk) VALUES (?, ?, ?)",
          turn!.id,
          seq + i + 1,
          JSON.stringify(chunk),
        );
      return turn!.id;
    });
    const { approvals } = (await (await call("GET", "/v1/api/approvals", { token: ws.adminToken })).json()) as {
      approvals: { id: string }[];
    };
    await call("POST", `/v1/api/conversations/${c.id}/approvals/${approvals[0]!.id}`, {
      token: ws.adminToken,
      body: { approved: true },
    });
    // What the second segment has said so far, as stored (nobody reads it: it is stored once a second).
    const storedSecond = (room: { ctx: DurableObjectState }) => {
      const chunks = room.ctx.storage.sql
        .exec<{ chunk: string }>("SELECT chunk FROM stream_events WHERE turn_id = ? ORDER BY seq", turnId)
        .toArray()
        .map((r) => JSON.parse(r.chunk) as UIMessageChunk);
      const start = chunks.findLastIndex((x) => x.type === "start");
      return chunks.slice(start).flatMap((x) => (x.type === "text-delta" ? [x.delta] : []));
    };
    await eventually(() => inRoom(c.id, (room) => storedSecond(room).length >= 3));
    await inRoom(c.id, (room) => {
      const turn = room.running!;
      room.running = null;
      turn.abandon();
    });
    expect(await runDurableObjectAlarm(roomStub(c.id))).toBe(true);
    const second = await inRoom(c.id, (room) => storedSecond(room).join("").trim());
    expect(second.length).toBeGreaterThan(0);
    const events = await auditEvents(ws.workspace.id, "conversation.turn");
    const interrupted = events.find((e) => e.details.finish === "interrupted");
    expect(interrupted!.details).toMatchObject({ usage: { input: 0, output: estimateTokens(second) } });
  });
});

describe("the end of a turn when D1 fails", () => {
  it("ends the turn as failed, bills and audits nothing, answers 5xx, and the next turn runs", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ text: "Never stored.", delayMs: 300 });
    const answer = postMessage(ws.adminToken, c.id, "lost?");
    await eventually(async () => (await turnStates(c.id)).length === 1);
    // The turn runs in its room now: the only D1 batch left is its end's.
    const failing = await inRoom(c.id, (room) => {
      const batch = room.env.DB.batch.bind(room.env.DB);
      return vi.spyOn(room.env.DB, "batch").mockImplementation(async (statements) => {
        if (statements.length > 2) throw new Error("D1_ERROR: simulated outage");
        return batch(statements);
      });
    });
    const res = await answer;
    failing.mockRestore();
    expect(res.status).toBeGreaterThanOrEqual(500);
    const states = await turnStates(c.id);
    expect(states.at(-1)!.state).toBe("failed");
    expect(await usageEntries(ws.workspace.id)).toEqual([]);
    expect(await auditEvents(ws.workspace.id, "conversation.turn")).toEqual([]);
    // The question stays in the conversation, and the directory counts it.
    expect((await roomMessages(c.id)).map((m) => m.role)).toEqual(["user"]);
    expect(await messageCount(c.id)).toBe(1);
    await expectNextTurnRuns(ws.adminToken, c.id, script);
  });
});

describe("the directory's count of a long turn's messages", () => {
  // "D1 keeps the directory row (… message count) …; the room updates it when a turn starts and ends."
  it("counts the question even when writing it on its own failed: it goes with the turn's end", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ text: REPLY, wordDelayMs: 120 });
    const res = await postMessage(ws.adminToken, c.id, "count", streaming);
    const reader = res.body!.getReader();
    await reader.read();
    let failures = 0;
    const failing = await inRoom(c.id, (room) => {
      const batch = room.env.DB.batch.bind(room.env.DB);
      return vi.spyOn(room.env.DB, "batch").mockImplementation(async (statements) => {
        // The question's own write (the directory's two statements), once.
        if (statements.length === 2 && failures++ === 0) throw new Error("D1_ERROR: simulated outage");
        return batch(statements);
      });
    });
    while (!(await reader.read()).done);
    failing.mockRestore();
    expect(failures).toBeGreaterThan(0);
    expect((await turnStates(c.id)).map((t) => t.state)).toEqual(["completed"]);
    expect(await messageCount(c.id)).toBe(2);
  });
});

describe("delete and erasure clear the room", () => {
  // "Deleting or erasing a conversation deletes the room's storage (`deleteAll`)."
  it("a conversation from before rooms deleted while its room copies it from D1 leaves nothing in the room", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    await env.DB.prepare(
      `INSERT INTO messages (id, conversation_id, workspace_id, role, author_user_id, content, created_at)
       VALUES (?1, ?2, ?3, 'user', ?4, 'old question', ?5)`,
    )
      .bind(`old-${unique()}`, c.id, ws.workspace.id, ws.user.id, new Date().toISOString())
      .run();
    await inRoom(c.id, async (room) => {
      // The first request's copy reads D1 as the deletion empties the room.
      const reading = room.messages(c.id, ws.workspace.id);
      await room.destroy();
      await reading.catch(() => undefined);
    });
    expect(await roomRows(c.id)).toEqual({ messages: 0, events: 0, turns: 0, meta: 0 });
  });

  it("a turn ending while its conversation is deleted writes nothing into the emptied room", async () => {
    const { c } = await orphanedTurn();
    await inRoom(c.id, async (room) => {
      // Deleted as the room looks for the cut-short turn: before it ends it.
      const ending = room.recoverInterrupted();
      await room.destroy();
      await ending;
    });
    expect(await roomRows(c.id)).toEqual({ messages: 0, events: 0, turns: 0, meta: 0 });
  });

  it("a turn whose end's D1 batch is in flight when its conversation is deleted stores nothing afterwards", async () => {
    const { c } = await orphanedTurn();
    await inRoom(c.id, async (room) => {
      let started: () => void = () => undefined;
      const inFlight = new Promise<void>((resolve) => {
        started = resolve;
      });
      const batch = room.env.DB.batch.bind(room.env.DB);
      const slow = vi.spyOn(room.env.DB, "batch").mockImplementation(async (statements) => {
        started();
        await new Promise((r) => setTimeout(r, 50));
        return batch(statements);
      });
      const ending = room.recoverInterrupted();
      await inFlight;
      await room.destroy();
      await ending;
      slow.mockRestore();
    });
    expect(await roomRows(c.id)).toEqual({ messages: 0, events: 0, turns: 0, meta: 0 });
  });
});
