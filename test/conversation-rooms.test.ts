import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { UIMessageChunk } from "ai";
import { describe, expect, it, vi } from "vitest";
import { ConversationWithMessagesSchema, TurnResponseSchema } from "../src/conversations/schemas";
import { call, expectProblem, parse } from "./support/api";
import { auditEvents } from "./support/audit";
import { eventually } from "./support/browser";
import { usageEntries } from "./support/ledger";
import {
  conversationOf,
  expectCutShortEnded,
  expectNextTurnRuns,
  inRoom,
  postMessage,
  REPLY,
  roomMessages,
  roomStub,
  sharedConversation,
  streaming,
  turnStates,
  watchLive,
} from "./support/rooms";
import { scriptedModels } from "./support/scripted-llm";
import { addUser, signupWorkspace } from "./support/seed";

const { script, current } = scriptedModels();

type SseEvent = { id: string | null; chunk: UIMessageChunk | "[DONE]" };

/** Reads SSE events one at a time; `take(n)` stops after n events. */
function sseReader(res: Response) {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  async function next(): Promise<SseEvent | null> {
    for (;;) {
      const end = buffer.indexOf("\n\n");
      if (end >= 0) {
        const lines = buffer.slice(0, end).split("\n");
        buffer = buffer.slice(end + 2);
        const id = lines.find((l) => l.startsWith("id: "))?.slice(4) ?? null;
        const data = lines.find((l) => l.startsWith("data: "))!.slice(6);
        return { id, chunk: data === "[DONE]" ? "[DONE]" : (JSON.parse(data) as UIMessageChunk) };
      }
      const r = await reader.read();
      if (r.done) return null;
      buffer += r.value;
    }
  }
  return {
    next,
    async rest(): Promise<SseEvent[]> {
      const out: SseEvent[] = [];
      for (let e = await next(); e; e = await next()) out.push(e);
      return out;
    },
    cancel: () => reader.cancel(),
  };
}

const textOf = (events: SseEvent[]) =>
  events
    .map((e) => e.chunk)
    .filter((c): c is Extract<UIMessageChunk, { type: "text-delta" }> => c !== "[DONE]" && c.type === "text-delta")
    .map((c) => c.delta)
    .join("");

describe("resumable turns: a dropped stream resumes where it left off", () => {
  it("replays the events after Last-Event-ID, then follows live: the text equals the uninterrupted reply", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ text: REPLY, wordDelayMs: 30 });
    const first = sseReader(await postMessage(ws.adminToken, c.id, "count", streaming));
    const seen: SseEvent[] = [];
    while (textOf(seen).length < 8) seen.push((await first.next())!);
    await first.cancel();
    const lastId = seen.at(-1)!.id!;
    expect(lastId).toMatch(/^[0-9a-f-]{36}:\d+$/);

    const resumed = await call("GET", `/v1/api/conversations/${c.id}/stream`, {
      token: ws.adminToken,
      headers: { "Last-Event-ID": lastId },
    });
    expect(resumed.status).toBe(200);
    expect(resumed.headers.get("x-vercel-ai-ui-message-stream")).toBe("v1");
    const rest = await sseReader(resumed).rest();
    expect(rest.at(-1)!.chunk).toBe("[DONE]");
    // No gap and no duplicate: the sequence numbers run on from the last one seen.
    const seqs = [...seen, ...rest].filter((e) => e.id).map((e) => Number(e.id!.split(":")[1]));
    expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    expect(textOf([...seen, ...rest])).toBe(REPLY);

    // After the turn's last event there is nothing more: 204, also with ?after=.
    const end = rest.filter((e) => e.id).at(-1)!.id!;
    const after = await call("GET", `/v1/api/conversations/${c.id}/stream?after=${end}`, { token: ws.adminToken });
    expect(after.status).toBe(204);
    expect((await call("GET", `/v1/api/conversations/${c.id}/stream`, { token: ws.adminToken })).status).toBe(204);
    // The reply was stored and billed once.
    const messages = await roomMessages(c.id);
    expect(messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "count"],
      ["assistant", REPLY],
    ]);
    expect(await usageEntries(ws.workspace.id)).toHaveLength(1);
  });

  it("streams the running turn from its start to a second reader; 400 for a malformed position, 404 for a non-participant", async () => {
    const ws = await signupWorkspace();
    const other = await addUser(ws.adminToken, "member", ["conversations:read"]);
    const c = await conversationOf(ws.adminToken);
    script({ text: REPLY, wordDelayMs: 20 });
    const first = sseReader(await postMessage(ws.adminToken, c.id, "count", streaming));
    await first.next();
    const second = await call("GET", `/v1/api/conversations/${c.id}/stream`, { token: ws.adminToken });
    const [a, b] = await Promise.all([first.rest(), sseReader(second).rest()]);
    expect(textOf(b)).toBe(REPLY);
    expect(textOf(a).length).toBeGreaterThan(0);
    await expectProblem(
      await call("GET", `/v1/api/conversations/${c.id}/stream`, {
        token: ws.adminToken,
        headers: { "Last-Event-ID": "not a position" },
      }),
      400,
      "invalid_position",
    );
    await expectProblem(await call("GET", `/v1/api/conversations/${c.id}/stream`, { token: other.token }), 404);
  });

  it("runs the turn to its end when the client leaves after the first event: stored and billed once", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ text: REPLY, wordDelayMs: 10 });
    const first = sseReader(await postMessage(ws.adminToken, c.id, "count", streaming));
    await first.next();
    await first.cancel();
    await eventually(async () => (await roomMessages(c.id)).length === 2);
    expect((await roomMessages(c.id))[1]).toMatchObject({ content: REPLY, stopped: false });
    await eventually(async () => (await auditEvents(ws.workspace.id, "conversation.turn")).length === 1);
    expect(await usageEntries(ws.workspace.id)).toHaveLength(1);
  });
});

describe("rooms side by side", () => {
  it("keeps the turns of conversations running at once each in its own room", async () => {
    const ws = await signupWorkspace();
    const conversations = await Promise.all([1, 2, 3].map(() => conversationOf(ws.adminToken)));
    script({ text: REPLY, wordDelayMs: 5 });
    const streams = await Promise.all(
      conversations.map((c, i) => postMessage(ws.adminToken, c.id, `question ${i}`, streaming)),
    );
    const texts = await Promise.all(streams.map(async (res) => textOf(await sseReader(res).rest())));
    expect(texts).toEqual([REPLY, REPLY, REPLY]);
    for (const [i, c] of conversations.entries()) {
      const stored = await roomMessages(c.id);
      expect(stored.map((m) => [m.role, m.content])).toEqual([
        ["user", `question ${i}`],
        ["assistant", REPLY],
      ]);
      expect((await turnStates(c.id)).map((t) => t.state)).toEqual(["completed"]);
    }
  });
});

describe("idempotent intake", () => {
  it("answers a repeat with the same key from the first turn, sequentially and concurrently: one turn, one debit", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    const model = script({ text: "Only once.", delayMs: 100 });
    const key = { "Idempotency-Key": "retry-1" };
    const [a, b] = await Promise.all([
      postMessage(ws.adminToken, c.id, "hi", key),
      postMessage(ws.adminToken, c.id, "hi", key),
    ]);
    const [ta, tb] = [await parse(a, TurnResponseSchema), await parse(b, TurnResponseSchema)];
    expect(tb.reply.id).toBe(ta.reply.id);
    expect(tb.user_message.id).toBe(ta.user_message.id);
    const again = await parse(await postMessage(ws.adminToken, c.id, "hi", key), TurnResponseSchema);
    expect(again.reply).toEqual(ta.reply);
    // A streaming repeat gets the same turn's stream from its start.
    const replay = await sseReader(await postMessage(ws.adminToken, c.id, "hi", { ...key, ...streaming })).rest();
    expect(replay[0]!.id).toBe(`${ta.reply.id}:1`);
    expect(textOf(replay)).toBe("Only once.");
    expect(model.requests).toHaveLength(1);
    expect(await usageEntries(ws.workspace.id)).toEqual([{ amount: -1, reference: ta.reply.id }]);
    expect(await roomMessages(c.id)).toHaveLength(2);
  });

  it("refuses the same key with other content (422 idempotency_key_reused) and stores nothing", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ text: "First." });
    const key = { "Idempotency-Key": "k" };
    expect((await postMessage(ws.adminToken, c.id, "first", key)).status).toBe(200);
    await expectProblem(await postMessage(ws.adminToken, c.id, "second", key), 422, "idempotency_key_reused");
    expect(await roomMessages(c.id)).toHaveLength(2);
    // Keys belong to their conversation.
    const other = await conversationOf(ws.adminToken);
    expect((await postMessage(ws.adminToken, other.id, "second", key)).status).toBe(200);
  });
});

describe("stop", () => {
  it("aborts the running turn: the partial reply is kept with stopped: true, billed, and nothing follows the stream's end", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ text: REPLY, wordDelayMs: 50 });
    const reader = sseReader(await postMessage(ws.adminToken, c.id, "count", streaming));
    const seen: SseEvent[] = [];
    while (textOf(seen).length < 4) seen.push((await reader.next())!);
    const started = Date.now();
    const res = await call("POST", `/v1/api/conversations/${c.id}/stop`, { token: ws.adminToken });
    expect(Date.now() - started).toBeLessThan(1_500);
    const stopped = (await res.json()) as { turn_id: string; state: string };
    expect(stopped).toMatchObject({ state: "stopped" });
    const all = [...seen, ...(await reader.rest())];
    const chunks = all.map((e) => e.chunk);
    expect(chunks.at(-1)).toBe("[DONE]");
    expect(["finish", "abort"]).toContain((chunks.at(-2) as UIMessageChunk).type);
    const text = textOf(all);
    expect(REPLY.startsWith(text)).toBe(true);
    expect(text.length).toBeLessThan(REPLY.length);

    const [, reply] = await roomMessages(c.id);
    expect(reply).toMatchObject({ id: stopped.turn_id, stopped: true, content: text.trim() });
    expect(reply!.credits).toBeGreaterThanOrEqual(1);
    expect(await usageEntries(ws.workspace.id)).toEqual([{ amount: -reply!.credits, reference: stopped.turn_id }]);
    const [event] = await auditEvents(ws.workspace.id, "conversation.turn");
    expect(event).toMatchObject({ details: { finish: "stopped" } });
    // The stored stream ends with that event too.
    const resumed = await call("GET", `/v1/api/conversations/${c.id}/stream?after=${stopped.turn_id}:0`, {
      token: ws.adminToken,
    });
    const replayed = (await sseReader(resumed).rest()).map((e) => e.chunk);
    expect(replayed).toEqual(chunks);
    // The reply shows as stopped, with its parts.
    const read = await parse(
      await call("GET", `/v1/api/conversations/${c.id}`, { token: ws.adminToken }),
      ConversationWithMessagesSchema,
    );
    expect(read.messages[1]).toMatchObject({
      stopped: true,
      parts: expect.arrayContaining([expect.objectContaining({ type: "text" })]),
    });
  });

  it("answers { turn_id: null, state: idle } with no turn running", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    const res = await call("POST", `/v1/api/conversations/${c.id}/stop`, { token: ws.adminToken });
    expect(await res.json()).toEqual({ turn_id: null, state: "idle" });
  });
});

describe("a room restarted mid-turn", () => {
  it("ends the cut-short turn as failed with its partial text kept and billed; the next turn runs", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ text: REPLY, wordDelayMs: 40 });
    const reader = sseReader(await postMessage(ws.adminToken, c.id, "count", streaming));
    const seen: SseEvent[] = [];
    while (textOf(seen).length < 4) seen.push((await reader.next())!);
    // What an eviction leaves: the turn stored as running, no code running it.
    await inRoom(c.id, (room) => {
      const running = room.running!;
      room.running = null;
      running.abandon();
    });
    expect(await runDurableObjectAlarm(roomStub(c.id))).toBe(true);
    await expectCutShortEnded(ws.workspace.id, c.id);
    current()?.restore();
    await expectNextTurnRuns(ws.adminToken, c.id, script);
  });
});

describe("conversations from before rooms", () => {
  it("are copied from D1 into the room on first use, and their turns go on from there", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    const at = new Date().toISOString();
    await env.DB.batch([
      env.DB.prepare(
        `INSERT INTO messages (id, conversation_id, workspace_id, role, author_user_id, content, created_at)
         VALUES (?1, ?2, ?3, 'user', ?4, 'old question', ?5)`,
      ).bind("01900000-0000-7000-8000-000000000001", c.id, ws.workspace.id, ws.user.id, at),
      env.DB.prepare(
        `INSERT INTO messages (id, conversation_id, workspace_id, role, content, credits, created_at)
         VALUES (?1, ?2, ?3, 'assistant', 'old answer', 1, ?4)`,
      ).bind("01900000-0000-7000-8000-000000000002", c.id, ws.workspace.id, at),
    ]);
    const read = await parse(
      await call("GET", `/v1/api/conversations/${c.id}`, { token: ws.adminToken }),
      ConversationWithMessagesSchema,
    );
    expect(read.messages.map((m) => [m.role, m.content, m.parts])).toEqual([
      ["user", "old question", [{ type: "text", text: "old question" }]],
      ["assistant", "old answer", [{ type: "text", text: "old answer" }]],
    ]);
    const model = script({ text: "New answer." });
    await parse(await postMessage(ws.adminToken, c.id, "new question"), TurnResponseSchema);
    expect(model.requests[0]!.messages.filter((m) => m.role !== "system").map((m) => m.content)).toEqual([
      "old question",
      "old answer",
      "new question",
    ]);
  });

  const oldQuestion = (c: { id: string }, ws: Awaited<ReturnType<typeof signupWorkspace>>) =>
    env.DB.prepare(
      `INSERT INTO messages (id, conversation_id, workspace_id, role, author_user_id, content, created_at)
       VALUES (?1, ?2, ?3, 'user', ?4, 'old question', ?5)`,
    ).bind(`old-${crypto.randomUUID()}`, c.id, ws.workspace.id, ws.user.id, new Date().toISOString());

  it("are copied when a turn is their first use: the directory counts their messages", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    await env.DB.batch([
      oldQuestion(c, ws),
      env.DB.prepare("UPDATE conversations SET message_count = 1 WHERE id = ?1").bind(c.id),
    ]);
    const model = script({ text: "New answer." });
    await parse(await postMessage(ws.adminToken, c.id, "new question"), TurnResponseSchema);
    expect(model.requests[0]!.messages.filter((m) => m.role !== "system").map((m) => m.content)).toEqual([
      "old question",
      "new question",
    ]);
  });

  it("a conversation the directory counts no message in is not read from D1 by its room's first turn", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    // A row D1 would hold only for a conversation from before rooms, whose count says so.
    await oldQuestion(c, ws).run();
    const asked = await inRoom(c.id, (room) => {
      const queries: string[] = [];
      const prepare = room.env.DB.prepare.bind(room.env.DB);
      const spy = vi.spyOn(room.env.DB, "prepare").mockImplementation((query) => {
        queries.push(query);
        return prepare(query);
      });
      return { queries, spy };
    });
    const model = script({ text: "Hello." });
    await parse(await postMessage(ws.adminToken, c.id, "first question"), TurnResponseSchema);
    expect(model.requests[0]!.messages.filter((m) => m.role !== "system").map((m) => m.content)).toEqual([
      "first question",
    ]);
    asked.spy.mockRestore();
    expect(asked.queries.length).toBeGreaterThan(0);
    expect(asked.queries.filter((q) => /from "messages"/i.test(q))).toEqual([]);
    expect((await roomMessages(c.id)).map((m) => m.content)).toEqual(["first question", "Hello."]);
  });
});

describe("delete and erasure clear the room", () => {
  const roomRows = (id: string) =>
    inRoom(id, (room) => ({
      messages: room.ctx.storage.sql.exec("SELECT count(*) AS n FROM messages").one().n,
      events: room.ctx.storage.sql.exec("SELECT count(*) AS n FROM stream_events").one().n,
      turns: room.ctx.storage.sql.exec("SELECT count(*) AS n FROM turns").one().n,
    }));

  it("deleting a conversation deletes its room's messages, turns and stream events", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ text: "Soon gone." });
    await sseReader(await postMessage(ws.adminToken, c.id, "hi", streaming)).rest();
    await eventually(async () => (await roomRows(c.id)).messages === 2);
    expect((await call("DELETE", `/v1/api/conversations/${c.id}`, { token: ws.adminToken })).status).toBe(200);
    expect(await roomRows(c.id)).toEqual({ messages: 0, events: 0, turns: 0 });
  });

  it("erasing the last participant deletes the room's data", async () => {
    const ws = await signupWorkspace();
    const member = await addUser(ws.adminToken, "member", ["conversations:read", "conversations:write"]);
    const c = await conversationOf(member.token);
    script({ text: "Private." });
    expect((await postMessage(member.token, c.id, "hi")).status).toBe(200);
    const erased = await call("POST", `/v1/admin/users/${member.user.id}/erase`, {
      token: ws.adminToken,
      body: { confirm: true },
    });
    expect(erased.status).toBe(200);
    expect(await roomRows(c.id)).toEqual({ messages: 0, events: 0, turns: 0 });
  });
});

describe("live participants", () => {
  it("pushes every new message and the running turn's events to every participant watching", async () => {
    const { ws, member, c } = await sharedConversation();
    const admin = await watchLive(c.id, { token: ws.adminToken });
    // Browsers send the token as the subprotocol, which the 101 echoes.
    const browser = await watchLive(c.id, { protocol: `svc-pat.${member.token}` });
    expect(browser.res.headers.get("Sec-WebSocket-Protocol")).toBe(`svc-pat.${member.token}`);
    script({ text: "Seen by both." });
    const turn = await parse(await postMessage(ws.adminToken, c.id, "hello both"), TurnResponseSchema);
    for (const viewer of [admin, browser]) {
      await eventually(async () => viewer.frames.filter((f) => f.type === "message").length === 2);
      const stored = viewer.frames.filter((f) => f.type === "message").map((f) => f.message);
      expect(stored.map((m) => [m.id, m.content])).toEqual([
        [turn.user_message.id, "hello both"],
        [turn.reply.id, "Seen by both."],
      ]);
      const chunks = viewer.frames.filter((f) => f.type === "chunk");
      expect(chunks.map((f) => f.seq)).toEqual(chunks.map((_, i) => i + 1));
      expect(chunks.every((f) => f.turn_id === turn.reply.id)).toBe(true);
      expect(textOf(chunks.map((f) => ({ id: null, chunk: f.chunk })))).toBe("Seen by both.");
      viewer.ws.close();
    }
  });

  it("refuses a non-participant (404), no credential (401) and a plain GET (426)", async () => {
    const ws = await signupWorkspace();
    const other = await addUser(ws.adminToken, "member", ["conversations:read"]);
    const c = await conversationOf(ws.adminToken);
    const upgrade = { Upgrade: "websocket" };
    await expectProblem(
      await call("GET", `/v1/api/conversations/${c.id}/live`, { token: other.token, headers: upgrade }),
      404,
    );
    await expectProblem(await call("GET", `/v1/api/conversations/${c.id}/live`, { headers: upgrade }), 401);
    await expectProblem(
      await call("GET", `/v1/api/conversations/${c.id}/live`, { token: ws.adminToken }),
      426,
      "upgrade_required",
    );
  });
});

describe("stream events are kept for the last 20 turns, 24 hours", () => {
  const eventTurns = (id: string) =>
    inRoom(id, (room) =>
      room.ctx.storage.sql
        .exec<{ turn_id: string }>("SELECT DISTINCT turn_id FROM stream_events")
        .toArray()
        .map((r) => r.turn_id),
    );

  it("drops the events of older turns, then those past 24 hours; a position in them answers 204", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ text: "Short." });
    const ids: string[] = [];
    for (let i = 0; i < 21; i++)
      ids.push((await parse(await postMessage(ws.adminToken, c.id, `q${i}`), TurnResponseSchema)).reply.id);
    await eventually(async () => (await eventTurns(c.id)).length === 20);
    expect(new Set(await eventTurns(c.id))).toEqual(new Set(ids.slice(1)));
    const gone = await call("GET", `/v1/api/conversations/${c.id}/stream?after=${ids[0]}:0`, { token: ws.adminToken });
    expect(gone.status).toBe(204);
    const kept = await call("GET", `/v1/api/conversations/${c.id}/stream?after=${ids[20]}:0`, { token: ws.adminToken });
    expect(kept.status).toBe(200);
    await kept.body?.cancel();

    // A day later the alarm clears the rest.
    await inRoom(c.id, (room) => {
      room.ctx.storage.sql.exec("UPDATE turns SET ended_at = ?", new Date(Date.now() - 25 * 3600_000).toISOString());
    });
    expect(await runDurableObjectAlarm(roomStub(c.id))).toBe(true);
    expect(await eventTurns(c.id)).toEqual([]);
    expect(await roomMessages(c.id)).toHaveLength(42);
  });
});
