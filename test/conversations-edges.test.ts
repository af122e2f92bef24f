import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { TurnResponseSchema } from "../src/conversations/schemas";
import { openAIErrorSchema } from "../src/platform/openai-error";
import { call, expectProblem, parse } from "./support/api";
import { eventually } from "./support/browser";
import { usageEntries } from "./support/ledger";
import { conversationOf, inRoom, postMessage, REPLY, roomMessages, streaming } from "./support/rooms";
import { scriptedModels } from "./support/scripted-llm";
import { addUser, signupWorkspace } from "./support/seed";

/** Edges of the conversations' HTTP surface a client can reach: odd headers, races, tenancy. */

const { script } = scriptedModels();

const directoryRow = (id: string) =>
  env.DB.prepare("SELECT id FROM conversations WHERE id = ?1").bind(id).first<{ id: string }>();

/** Reads an SSE body until its first event of `type` (default: a text delta); returns that event's id. */
async function firstEventId(res: Response, type = "text-delta"): Promise<{ id: string; rest: Promise<string> }> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const match = new RegExp(`id: ([^\\n]+)\\ndata: \\{"type":"${type}"`).exec(buffer);
    if (match) {
      const rest = (async () => {
        let text = buffer;
        for (let r = await reader.read(); !r.done; r = await reader.read()) text += r.value;
        return text;
      })();
      return { id: match[1]!, rest };
    }
    const r = await reader.read();
    if (r.done) throw new Error(`the stream ended before an event: ${buffer}`);
    buffer += r.value;
  }
}

describe("deleting a conversation while its turn runs", () => {
  it("answers the JSON post waiting for the turn's reply 404, not a 500", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ text: "Once." });
    const key = { "Idempotency-Key": "waits-for-the-turn" };
    const first = await parse(await postMessage(ws.adminToken, c.id, "hi", key), TurnResponseSchema);
    // The room takes the turn for still running (without a model call in flight), so a JSON
    // repeat of its key waits for its end: "a JSON repeat waits for the end and answers the stored reply".
    let waiting = false;
    await inRoom(c.id, (room) => {
      let end = () => {};
      const settled = new Promise<void>((resolve) => {
        end = resolve;
      });
      room.running = {
        turnId: first.reply.id,
        position: 1,
        seq: 0,
        chunks: [],
        followers: new Set(),
        closed: false,
        settled: {
          // biome-ignore lint/suspicious/noThenProperty: a thenable that tells when the repeat waits on it
          then: (ok: () => void, ko: () => void) => {
            waiting = true;
            return settled.then(ok, ko);
          },
        } as Promise<void>,
        stop: () => {},
        store: () => {},
        // The deletion abandons the turn, which settles once its model call has let go: after the
        // room's storage is gone.
        abandon: () => setTimeout(end, 100),
      };
    });
    const repeat = postMessage(ws.adminToken, c.id, "hi", key);
    await eventually(async () => waiting);
    expect((await call("DELETE", `/v1/api/conversations/${c.id}`, { token: ws.adminToken })).status).toBe(200);
    await expectProblem(await repeat, 404, "not_found");
    expect(await usageEntries(ws.workspace.id)).toHaveLength(1);
  });

  it("a resume, a stop and an idempotent retry of a deleted conversation are 404 and store nothing", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ text: "Soon gone." });
    const key = { ...streaming, "Idempotency-Key": "retry-after-delete" };
    const { id: position, rest } = await firstEventId(await postMessage(ws.adminToken, c.id, "count", key), "start");
    await rest;
    expect((await call("DELETE", `/v1/api/conversations/${c.id}`, { token: ws.adminToken })).status).toBe(200);

    const stream = `/v1/api/conversations/${c.id}/stream`;
    await expectProblem(await call("GET", stream, { token: ws.adminToken }), 404, "not_found");
    await expectProblem(
      await call("GET", stream, { token: ws.adminToken, headers: { "Last-Event-ID": position } }),
      404,
      "not_found",
    );
    await expectProblem(
      await call("POST", `/v1/api/conversations/${c.id}/stop`, { token: ws.adminToken }),
      404,
      "not_found",
    );
    await expectProblem(await postMessage(ws.adminToken, c.id, "count", key), 404, "not_found");
    expect(await directoryRow(c.id)).toBeNull();
    expect(await roomMessages(c.id)).toEqual([]);
    expect(await usageEntries(ws.workspace.id)).toHaveLength(1);
  });
});

describe("stop", () => {
  it("two stops at once both answer the one turn, stopped; it is billed once", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ text: REPLY, wordDelayMs: 40 });
    const { rest } = await firstEventId(await postMessage(ws.adminToken, c.id, "count", streaming));
    const stop = () => call("POST", `/v1/api/conversations/${c.id}/stop`, { token: ws.adminToken });
    const [a, b] = await Promise.all([stop(), stop()]);
    const answers = [await a.json(), await b.json()] as { turn_id: string; state: string }[];
    expect(answers[0]).toMatchObject({ state: "stopped" });
    expect(answers[1]).toEqual(answers[0]);
    await rest;
    // Once it has ended: "With no turn running: 200 `{ turn_id: null, state: "idle" }`."
    expect(await (await stop()).json()).toEqual({ turn_id: null, state: "idle" });
    expect(await usageEntries(ws.workspace.id)).toHaveLength(1);
  });

  it("a member without the conversation, or a token without conversations:write, stops nothing", async () => {
    const ws = await signupWorkspace();
    const outsider = await addUser(ws.adminToken, "member", ["conversations:read", "conversations:write"]);
    const readOnly = await addUser(ws.adminToken, "member", ["conversations:read"]);
    const other = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    await call("POST", `/v1/api/conversations/${c.id}/participants`, {
      token: ws.adminToken,
      body: { user_id: readOnly.user.id },
    });
    script({ text: REPLY, wordDelayMs: 30 });
    const { rest } = await firstEventId(await postMessage(ws.adminToken, c.id, "count", streaming));
    const stop = (token: string) => call("POST", `/v1/api/conversations/${c.id}/stop`, { token });
    await expectProblem(await stop(outsider.token), 404, "not_found");
    await expectProblem(await stop(other.adminToken), 404, "not_found");
    await expectProblem(await stop(readOnly.token), 403);
    const text = await rest;
    expect(text).toContain('"type":"finish"');
    const [, reply] = await roomMessages(c.id);
    expect(reply).toMatchObject({ content: REPLY, stopped: false });
  });
});

describe("odd headers", () => {
  it("refuses an Idempotency-Key over 255 characters or empty with 400, before a turn runs", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ text: "Never." });
    for (const key of ["k".repeat(256), ""]) {
      await expectProblem(await postMessage(ws.adminToken, c.id, "hi", { "Idempotency-Key": key }), 400);
    }
    expect(await roomMessages(c.id)).toEqual([]);
  });

  it("answers Last-Event-ID / after of odd shapes: 400 when malformed, 204 for a position naming no turn here", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    const other = await conversationOf(ws.adminToken);
    script({ text: "Short." });
    const { id: otherPosition, rest } = await firstEventId(await postMessage(ws.adminToken, other.id, "hi", streaming));
    await rest;
    const stream = `/v1/api/conversations/${c.id}/stream`;
    const get = (headers: Record<string, string>, query = "") =>
      call("GET", `${stream}${query}`, { token: ws.adminToken, headers });
    for (const bad of ["x".repeat(201), "abc:1234567890", ":1", "abc:", "abc:-1", "a b:1", "abc:1.5"])
      await expectProblem(await get({ "Last-Event-ID": bad }), 400);
    for (const bad of ["", "abc", "abc:1:2"]) await expectProblem(await get({}, `?after=${bad}`), 400);
    // Another conversation's turn is not one of this one's: nothing to send.
    expect((await get({ "Last-Event-ID": otherPosition })).status).toBe(204);
    expect((await get({}, `?after=${encodeURIComponent(otherPosition)}`)).status).toBe(204);
    expect((await get({ "Last-Event-ID": "0190f5e2-7c1a-7000-8000-000000000000:999999999" })).status).toBe(204);
  });

  it("answers a malformed or foreign X-Conversation-Id on /v1/chat/completions in OpenAI's shape", async () => {
    const ws = await signupWorkspace();
    const other = await signupWorkspace();
    const foreign = await conversationOf(other.adminToken);
    script({ text: "Never." });
    const complete = (header: string) =>
      call("POST", "/v1/chat/completions", {
        token: ws.adminToken,
        body: { model: "default", messages: [{ role: "user", content: "hi" }] },
        headers: { "X-Conversation-Id": header },
      });
    const bad = await complete("not-a-uuid");
    expect(bad.status).toBe(400);
    openAIErrorSchema().parse(await bad.json());
    const missing = await complete(foreign.id);
    expect(missing.status).toBe(404);
    openAIErrorSchema().parse(await missing.json());
    expect(await roomMessages(foreign.id)).toEqual([]);
  });
});

describe("idempotent retries after a regeneration", () => {
  /** A turn posted with an Idempotency-Key whose reply `/v1/api/chat` then regenerated ("First." → "Second."). */
  async function regeneratedSince() {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ text: "First." }, { text: "Second." });
    const key = { "Idempotency-Key": `regenerated-${c.id}` };
    const first = await parse(await postMessage(ws.adminToken, c.id, "hi", key), TurnResponseSchema);
    const regenerated = await call("POST", "/v1/api/chat", {
      token: ws.adminToken,
      body: {
        id: c.id,
        messages: [{ id: first.user_message.id, role: "user", parts: [{ type: "text", text: "hi" }] }],
        trigger: "regenerate-message",
        messageId: first.reply.id,
      },
    });
    expect(regenerated.status).toBe(200);
    await regenerated.text();
    await eventually(async () => (await usageEntries(ws.workspace.id)).length === 2);
    return { ws, c, key, first };
  }

  it("answers a retry whose reply was regenerated since with the reply that now answers the question, billing nothing", async () => {
    const { ws, c, key, first } = await regeneratedSince();
    // "A repeat with the same key within 24 h runs and bills nothing new: it answers the same turn
    // (its stream from the start, or the stored reply)": that turn's reply is now the regenerated one.
    const again = await parse(await postMessage(ws.adminToken, c.id, "hi", key), TurnResponseSchema);
    expect(again.user_message).toEqual(first.user_message);
    expect(again.reply).toMatchObject({ content: "Second.", role: "assistant" });
    expect(again.reply.id).not.toBe(first.reply.id);
    expect(await usageEntries(ws.workspace.id)).toHaveLength(2);
    expect((await roomMessages(c.id)).map((m) => m.content)).toEqual(["hi", "Second."]);
  });

  it("streams a retry whose reply was regenerated since as the regeneration's stream, not the deleted reply's", async () => {
    const { ws, c, key, first } = await regeneratedSince();
    const again = await postMessage(ws.adminToken, c.id, "hi", { ...key, ...streaming });
    expect(again.status).toBe(200);
    const body = await again.text();
    const ids = [...body.matchAll(/^id: ([^:\n]+):\d+$/gm)].map((m) => m[1]);
    expect(ids.length).toBeGreaterThan(0);
    expect(new Set(ids).size).toBe(1);
    expect(ids[0]).not.toBe(first.reply.id);
    const text = [...body.matchAll(/"type":"text-delta","id":"[^"]+","delta":"([^"]*)"/g)].map((m) => m[1]).join("");
    expect(text).toBe("Second.");
    expect(await usageEntries(ws.workspace.id)).toHaveLength(2);
  });
});
