import { env } from "cloudflare:workers";
import { readUIMessageStream, type UIMessageChunk } from "ai";
import { HttpResponse, http } from "msw";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { balance, debit } from "../src/billing/ledger";
import {
  AskResponseSchema,
  ConversationListSchema,
  ConversationSchema,
  ConversationWithMessagesSchema,
  DeletedSchema,
  TurnResponseSchema,
} from "../src/conversations/schemas";
import { createAgent } from "./support/agents";
import { call, expectProblem, parse } from "./support/api";
import { auditEvents } from "./support/audit";
import { eventually } from "./support/browser";
import { LLM_BASE_URL, LLM_ENV, llmServer } from "./support/fake-llm";
import { usageEntries } from "./support/ledger";
import { roomMessages } from "./support/rooms";
import { type fakeLlm, scriptedModels } from "./support/scripted-llm";
import { addUser, signupWorkspace } from "./support/seed";

const { script, current } = scriptedModels();

async function start(token: string, body: Record<string, unknown> = {}) {
  const res = await call("POST", "/v1/api/conversations", { token, body });
  expect(res.status).toBe(201);
  return parse(res, ConversationSchema);
}

const post = (token: string, id: string, content: string, headers: Record<string, string> = {}) =>
  call("POST", `/v1/api/conversations/${id}/messages`, { token, body: { content }, headers });

/** The messages a conversation's room holds, oldest first. */
const messageRows = (conversationId: string) => roomMessages(conversationId);

describe("conversations: create, read, list, delete", () => {
  it("starts a conversation with the default agent and shows it to its creator", async () => {
    const ws = await signupWorkspace();
    const conversation = await start(ws.adminToken, { title: "Plans" });
    expect(conversation).toMatchObject({
      title: "Plans",
      mode: "standard",
      agent_slug: "assistant",
      created_by: ws.user.id,
      participant_ids: [ws.user.id],
    });
    const res = await call("GET", `/v1/api/conversations/${conversation.id}`, { token: ws.adminToken });
    expect(await parse(res, ConversationWithMessagesSchema)).toMatchObject({ id: conversation.id, messages: [] });
    const [event] = await auditEvents(ws.workspace.id, "conversation.create");
    expect(event).toMatchObject({ target: `conversation:${conversation.id}`, details: { mode: "standard" } });
  });

  it("answers 404 for an unknown agent, 400 for a disabled one or a bad body, 401 and 403 for credentials", async () => {
    const ws = await signupWorkspace();
    await expectProblem(
      await call("POST", "/v1/api/conversations", { token: ws.adminToken, body: { agent_slug: "nobody" } }),
      404,
    );
    const created = await call("POST", "/v1/agents", {
      token: ws.adminToken,
      body: { slug: "helper", display_name: "Helper" },
    });
    const helper = (await created.json()) as { id: string };
    await call("DELETE", `/v1/agents/${helper.id}`, { token: ws.adminToken });
    await expectProblem(
      await call("POST", "/v1/api/conversations", { token: ws.adminToken, body: { agent_slug: "helper" } }),
      400,
      "agent_disabled",
    );
    await expectProblem(
      await call("POST", "/v1/api/conversations", { token: ws.adminToken, body: { mode: "slow" } }),
      400,
      "validation_failed",
    );
    await expectProblem(
      await call("POST", "/v1/api/conversations", { token: ws.adminToken, body: { extra: 1 } }),
      400,
      "validation_failed",
    );
    await expectProblem(await call("POST", "/v1/api/conversations", { body: {} }), 401);
    const reader = await addUser(ws.adminToken, "member", ["conversations:read"]);
    await expectProblem(await call("POST", "/v1/api/conversations", { token: reader.token, body: {} }), 403);
  });

  it("hides a conversation from non-participants and other workspaces (404)", async () => {
    const ws = await signupWorkspace();
    const other = await signupWorkspace();
    const member = await addUser(ws.adminToken, "member", ["conversations:read", "conversations:write"]);
    const conversation = await start(ws.adminToken);
    for (const token of [member.token, other.adminToken]) {
      await expectProblem(await call("GET", `/v1/api/conversations/${conversation.id}`, { token }), 404);
      await expectProblem(await call("DELETE", `/v1/api/conversations/${conversation.id}`, { token }), 404);
      await expectProblem(await post(token, conversation.id, "hello"), 404);
    }
    await expectProblem(await call("GET", "/v1/api/conversations/not-a-uuid", { token: ws.adminToken }), 400);
  });

  it("adds a participant of the same workspace, who may then read; never one of another workspace", async () => {
    const ws = await signupWorkspace();
    const other = await signupWorkspace();
    const member = await addUser(ws.adminToken, "member", ["conversations:read", "conversations:write"]);
    const conversation = await start(ws.adminToken);
    const path = `/v1/api/conversations/${conversation.id}/participants`;
    await expectProblem(await call("POST", path, { token: ws.adminToken, body: { user_id: other.user.id } }), 404);
    await expectProblem(await call("POST", path, { token: member.token, body: { user_id: member.user.id } }), 404);
    const res = await call("POST", path, { token: ws.adminToken, body: { user_id: member.user.id } });
    expect((await parse(res, ConversationSchema)).participant_ids.sort()).toEqual([ws.user.id, member.user.id].sort());
    const again = await call("POST", path, { token: ws.adminToken, body: { user_id: member.user.id } });
    expect(again.status).toBe(200);
    expect((await call("GET", `/v1/api/conversations/${conversation.id}`, { token: member.token })).status).toBe(200);
    const events = await auditEvents(ws.workspace.id, "conversation.participant.add");
    expect(events.map((e) => e.details)).toEqual([
      { user_id: member.user.id, added: false },
      { user_id: member.user.id, added: true },
    ]);
  });

  it("lists the caller's conversations newest first, page by page", async () => {
    const ws = await signupWorkspace();
    const member = await addUser(ws.adminToken, "member", ["conversations:read", "conversations:write"]);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await start(ws.adminToken, { title: `c${i}` })).id);
    await start(member.token);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const query: string = cursor ? `?limit=2&cursor=${encodeURIComponent(cursor)}` : "?limit=2";
      const page = await parse(
        await call("GET", `/v1/api/conversations${query}`, { token: ws.adminToken }),
        ConversationListSchema,
      );
      expect(page.conversations.length).toBeLessThanOrEqual(2);
      seen.push(...page.conversations.map((c) => c.id));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
    for (const q of ["?limit=0", "?limit=101", "?limit=x", "?cursor=bm9wZQ"]) {
      await expectProblem(await call("GET", `/v1/api/conversations${q}`, { token: ws.adminToken }), 400);
    }
  });

  it("deletes a conversation for every participant, with its messages", async () => {
    const ws = await signupWorkspace();
    const conversation = await start(ws.adminToken);
    const res = await call("DELETE", `/v1/api/conversations/${conversation.id}`, { token: ws.adminToken });
    expect(await parse(res, DeletedSchema)).toEqual({ id: conversation.id, deleted: true });
    await expectProblem(await call("GET", `/v1/api/conversations/${conversation.id}`, { token: ws.adminToken }), 404);
    expect(await messageRows(conversation.id)).toEqual([]);
    expect(await auditEvents(ws.workspace.id, "conversation.delete")).toHaveLength(1);
  });
});

describe("conversations: turns", () => {
  it("answers a message, stores both messages, debits the turn once and audits it without text", async () => {
    const ws = await signupWorkspace();
    const conversation = await start(ws.adminToken);
    const model = script({ text: "Hello from the agent." });
    const res = await post(ws.adminToken, conversation.id, "Say hello");
    const turn = await parse(res, TurnResponseSchema);
    expect(turn.user_message).toMatchObject({ role: "user", content: "Say hello", author_user_id: ws.user.id });
    // 10 + 5 tokens on the standard profile: max(1, ceil(0.015 × 2)) = 1 credit.
    expect(turn.reply).toMatchObject({
      role: "assistant",
      content: "Hello from the agent.",
      usage: { input_tokens: 10, output_tokens: 5, credits: 1 },
    });
    expect(model.requests[0]!.messages.at(-1)).toMatchObject({ role: "user", content: "Say hello" });
    expect((await messageRows(conversation.id)).map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(await usageEntries(ws.workspace.id)).toEqual([{ amount: -1, reference: turn.reply.id }]);
    const [event] = await auditEvents(ws.workspace.id, "conversation.turn");
    expect(event).toMatchObject({ conversation_id: conversation.id, details: { credits: 1, steps: 1 } });
    expect(JSON.stringify(event)).not.toContain("Say hello");
    expect(JSON.stringify(event)).not.toContain("Hello from the agent");
  });

  it("keeps neither reply, debit nor event when the turn's event cannot be written (503 reply_not_stored), and frees the conversation", async () => {
    const ws = await signupWorkspace();
    const conversation = await start(ws.adminToken);
    script({ text: "lost" });
    await env.DB.prepare(
      `CREATE TRIGGER fail_turn_event BEFORE INSERT ON audit_outbox WHEN NEW.event LIKE '%"conversation.turn"%'
       BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
    ).run();
    try {
      const res = await post(ws.adminToken, conversation.id, "hi");
      await expectProblem(res, 503, "reply_not_stored");
      expect(res.headers.get("Retry-After")).toBe("1");
    } finally {
      await env.DB.prepare("DROP TRIGGER fail_turn_event").run();
    }
    expect((await messageRows(conversation.id)).map((m) => m.role)).toEqual(["user"]);
    expect(await usageEntries(ws.workspace.id)).toEqual([]);
    expect(await auditEvents(ws.workspace.id, "conversation.turn")).toEqual([]);
    current()?.restore();
    script({ text: "back" });
    expect((await post(ws.adminToken, conversation.id, "again")).status).toBe(200);
    expect(await auditEvents(ws.workspace.id, "conversation.turn")).toHaveLength(1);
  });

  it("sends the earlier messages as history", async () => {
    const ws = await signupWorkspace();
    const conversation = await start(ws.adminToken);
    const model = script({ text: "First answer." });
    await parse(await post(ws.adminToken, conversation.id, "First question"), TurnResponseSchema);
    await parse(await post(ws.adminToken, conversation.id, "Second question"), TurnResponseSchema);
    expect(model.requests[1]!.messages.filter((m) => m.role !== "system")).toEqual([
      { role: "user", content: "First question" },
      { role: "assistant", content: "First answer." },
      { role: "user", content: "Second question" },
    ]);
  });

  it("answers 503 without a model and 402 without credits, before anything is stored or the model is called", async () => {
    const ws = await signupWorkspace();
    const conversation = await start(ws.adminToken);
    await expectProblem(await post(ws.adminToken, conversation.id, "hi"), 503, "model_not_configured");
    const model = script({ text: "never" });
    await debit(env, ws.workspace.id, (await balance(env, ws.workspace.id)) + 500, "drain");
    const problem = await expectProblem(await post(ws.adminToken, conversation.id, "hi"), 402, "insufficient_credits");
    expect(problem).toMatchObject({ balance: expect.any(Number) });
    expect((problem as unknown as { packs: unknown[] }).packs.length).toBeGreaterThan(0);
    expect(model.requests).toHaveLength(0);
    expect(await messageRows(conversation.id)).toEqual([]);
  });

  it("runs one turn at a time: of two posts at once, one is 409 turn_in_progress", async () => {
    const ws = await signupWorkspace();
    const conversation = await start(ws.adminToken);
    script({ text: "slow answer", delayMs: 300 });
    const [a, b] = await Promise.all([
      post(ws.adminToken, conversation.id, "one"),
      post(ws.adminToken, conversation.id, "two"),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    await expectProblem(a.status === 409 ? a : b, 409, "turn_in_progress");
    expect((await messageRows(conversation.id)).map((m) => m.role)).toEqual(["user", "assistant"]);
    // The turn has ended, so the next message goes through.
    expect((await post(ws.adminToken, conversation.id, "three")).status).toBe(200);
  });

  it("answers 502 when the model fails, keeps the question and frees the conversation", async () => {
    const ws = await signupWorkspace();
    const conversation = await start(ws.adminToken);
    script({ status: 500 });
    // Retried once (a 5xx may pass), then shown as the provider said it.
    const problem = await expectProblem(await post(ws.adminToken, conversation.id, "hi"), 502, "model_error");
    expect(problem).toMatchObject({ detail: "scripted failure", provider_status: 500 });
    expect(current()!.requests).toHaveLength(2);
    expect((await messageRows(conversation.id)).map((m) => m.role)).toEqual(["user"]);
    expect(await usageEntries(ws.workspace.id)).toEqual([]);
    current()?.restore();
    script({ text: "back" });
    expect((await post(ws.adminToken, conversation.id, "again")).status).toBe(200);
  });

  it("streams the turn in the UI message stream protocol and stores it when the stream ends", async () => {
    const ws = await signupWorkspace();
    const conversation = await start(ws.adminToken);
    script({ text: "Streaming works fine." });
    const res = await post(ws.adminToken, conversation.id, "stream please", { Accept: "text/event-stream" });
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toContain("text/event-stream");
    expect(res.headers.get("x-vercel-ai-ui-message-stream")).toBe("v1");
    const chunks = res.body!.pipeThrough(new TextDecoderStream()).pipeThrough(sseChunks());
    let last: { id: string; parts: { type: string; text?: string }[] } | undefined;
    for await (const message of readUIMessageStream({ stream: chunks })) last = message;
    const text = last!.parts
      .filter((p) => p.type === "text")
      .map((p) => p.text)
      .join("");
    expect(text).toBe("Streaming works fine.");
    await eventually(async () => (await messageRows(conversation.id)).length === 2);
    const rows = await messageRows(conversation.id);
    expect(rows[1]).toMatchObject({ id: last!.id, role: "assistant", content: "Streaming works fine.", credits: 1 });
    await eventually(async () => (await usageEntries(ws.workspace.id)).length === 1);
  });

  it("stores and bills the turn once when the client stops reading mid-stream", async () => {
    const ws = await signupWorkspace();
    const conversation = await start(ws.adminToken);
    script({ text: "A reply nobody reads to the end.", delayMs: 200 });
    const res = await post(ws.adminToken, conversation.id, "then hang up", { Accept: "text/event-stream" });
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    // The model has not answered yet when the client hangs up.
    expect(first).not.toContain("A reply");
    await reader.cancel();
    await eventually(async () => (await messageRows(conversation.id)).length === 2);
    await eventually(async () => (await usageEntries(ws.workspace.id)).length === 1);
    expect((await messageRows(conversation.id))[1]).toMatchObject({ content: "A reply nobody reads to the end." });
    await eventually(async () => (await auditEvents(ws.workspace.id, "conversation.turn")).length === 1);
    expect(await usageEntries(ws.workspace.id)).toHaveLength(1);
  });
});

describe("quick ask", () => {
  it("creates an empty fast conversation with the default agent whose turns run on the fast profile", async () => {
    const ws = await signupWorkspace();
    await expectProblem(await call("POST", "/v1/api/ask", { token: ws.adminToken }), 503, "quick_chat_not_configured");
    script({ text: "quick" });
    const { conversation_id } = await parse(
      await call("POST", "/v1/api/ask", { token: ws.adminToken }),
      AskResponseSchema,
    );
    const conversation = await parse(
      await call("GET", `/v1/api/conversations/${conversation_id}`, { token: ws.adminToken }),
      ConversationWithMessagesSchema,
    );
    expect(conversation).toMatchObject({ mode: "fast", agent_slug: "assistant", messages: [] });
    const turn = await parse(await post(ws.adminToken, conversation_id, "quick one"), TurnResponseSchema);
    // 15 tokens on the fast profile: max(1, ceil(0.015 × 1)) = 1.
    expect(turn.reply.usage.credits).toBe(1);
    const [event] = await auditEvents(ws.workspace.id, "conversation.turn");
    expect(event!.details).toMatchObject({ runtime_profile: "fast" });
  });

  it("answers 402 when out of credits and 403 without conversations:write", async () => {
    const ws = await signupWorkspace();
    script({ text: "never" });
    await debit(env, ws.workspace.id, (await balance(env, ws.workspace.id)) + 500, "drain");
    await expectProblem(await call("POST", "/v1/api/ask", { token: ws.adminToken }), 402, "insufficient_credits");
    const reader = await addUser(ws.adminToken, "member", ["conversations:read"]);
    await expectProblem(await call("POST", "/v1/api/ask", { token: reader.token }), 403);
  });
});

/** Server-sent events to the JSON chunks `readUIMessageStream` takes. */
function sseChunks() {
  let buffer = "";
  return new TransformStream<string, UIMessageChunk>({
    transform(text, controller) {
      buffer += text;
      let end = buffer.indexOf("\n\n");
      while (end >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = event
          .split("\n")
          .find((line) => line.startsWith("data: "))
          ?.slice("data: ".length);
        if (data && data !== "[DONE]") controller.enqueue(JSON.parse(data) as UIMessageChunk);
        end = buffer.indexOf("\n\n");
      }
    },
  });
}

describe("turns use the areas' tools", () => {
  const offered = (model: ReturnType<typeof fakeLlm>, i = 0) =>
    (model.requests[i]!.tools ?? []).map((t) => t.function.name).sort();

  it("offers deliver_file and memory, never computer_*, and lists the delivered file on the reply", async () => {
    const ws = await signupWorkspace();
    const conversation = await start(ws.adminToken);
    const model = script(
      { tool: "deliver_file", args: { name: "notes.md", content: "# Notes\n\nAll of them." } },
      { text: "Here are your notes." },
    );
    const turn = await parse(await post(ws.adminToken, conversation.id, "Write my notes"), TurnResponseSchema);
    expect(offered(model)).toEqual(expect.arrayContaining(["deliver_file", "recall", "remember"]));
    expect(offered(model).some((name) => name.startsWith("computer_"))).toBe(false);
    expect(turn.reply).toMatchObject({
      content: "Here are your notes.",
      tool_calls: [{ name: "deliver_file", ok: true }],
    });
    expect(turn.reply.artifact_ids).toHaveLength(1);
    const download = await call("GET", `/v1/api/artifacts/${turn.reply.artifact_ids[0]}/download`, {
      token: ws.adminToken,
    });
    expect(await download.text()).toBe("# Notes\n\nAll of them.");
    const read = await parse(
      await call("GET", `/v1/api/conversations/${conversation.id}`, { token: ws.adminToken }),
      ConversationWithMessagesSchema,
    );
    expect(read.messages[1]!.artifact_ids).toEqual(turn.reply.artifact_ids);
    // Deleting the file takes it off the transcript.
    await call("DELETE", `/v1/api/artifacts/${turn.reply.artifact_ids[0]}`, { token: ws.adminToken });
    const after = await parse(
      await call("GET", `/v1/api/conversations/${conversation.id}`, { token: ws.adminToken }),
      ConversationWithMessagesSchema,
    );
    expect(after.messages[1]!.artifact_ids).toEqual([]);
  });

  it("gives a frozen agent no memory tools", async () => {
    const ws = await signupWorkspace();
    const conversation = await start(ws.adminToken);
    expect((await call("PUT", "/v1/memory/freeze/assistant", { token: ws.adminToken, body: {} })).status).toBe(200);
    const model = script({ text: "ok" });
    await parse(await post(ws.adminToken, conversation.id, "Remember I like tea"), TurnResponseSchema);
    expect(offered(model)).not.toContain("remember");
    expect(offered(model)).not.toContain("recall");
  });
});

describe("conversations: erasure", () => {
  it("takes the erased user out of every conversation and deletes the ones nobody is left in", async () => {
    const ws = await signupWorkspace();
    const member = await addUser(ws.adminToken, "member", ["conversations:read", "conversations:write"]);
    const alone = await start(member.token);
    const shared = await start(member.token);
    await call("POST", `/v1/api/conversations/${shared.id}/participants`, {
      token: member.token,
      body: { user_id: ws.user.id },
    });
    const res = await call("POST", `/v1/admin/users/${member.user.id}/erase`, {
      token: ws.adminToken,
      body: { confirm: true },
    });
    expect(res.status).toBe(200);
    const summary = (await res.json()) as { counts: Record<string, number> };
    expect(summary.counts.conversations_left).toBe(2);
    const still = await parse(
      await call("GET", `/v1/api/conversations/${shared.id}`, { token: ws.adminToken }),
      ConversationWithMessagesSchema,
    );
    expect(still.participant_ids).toEqual([ws.user.id]);
    const gone = await env.DB.prepare("SELECT COUNT(*) AS n FROM conversations WHERE id = ?1")
      .bind(alone.id)
      .first<{ n: number }>();
    expect(gone!.n).toBe(0);
  });
});

// "A model provider's refusal is shown, not hidden: 502 `model_error` (stream: an `error` chunk)
// with the provider's status and message (no secrets)"
describe("a model provider's refusal", () => {
  const refusal = (model: string) => ({
    error: { message: `The model \`${model}\` does not exist`, type: "invalid_request_error", code: "model_not_found" },
  });
  const sent: { model: string }[] = [];
  // Turns run in the conversation's room, which reads the deployment's env: the provider is configured there.
  const vars = env as unknown as Record<string, string | undefined>;
  beforeAll(() => llmServer.listen({ onUnhandledRequest: "error" }));
  beforeEach(() => Object.assign(vars, LLM_ENV));
  afterEach(() => {
    llmServer.resetHandlers();
    sent.length = 0;
    for (const key of Object.keys(LLM_ENV)) delete vars[key];
  });
  afterAll(() => llmServer.close());

  /** A workspace whose agent pins a model the fake OpenAI-compatible provider does not offer (404). */
  async function pinnedToAMissingModel() {
    const ws = await signupWorkspace();
    await createAgent(ws.adminToken, { slug: "pinned", display_name: "Pinned", model: "llama-3.3-70b" });
    const conversation = await start(ws.adminToken, { agent_slug: "pinned" });
    llmServer.use(
      http.post(`${LLM_BASE_URL}/chat/completions`, async ({ request }) => {
        const body = (await request.json()) as { model: string };
        sent.push(body);
        return HttpResponse.json(refusal(body.model), { status: 404 });
      }),
    );
    const postWith = (headers: Record<string, string> = {}) =>
      call("POST", `/v1/api/conversations/${conversation.id}/messages`, {
        token: ws.adminToken,
        body: { content: "hi" },
        headers,
      });
    return { ws, conversation, postWith };
  }

  it("answers 502 model_error with the provider's message and status; the pinned model went verbatim, nothing billed", async () => {
    const { ws, conversation, postWith } = await pinnedToAMissingModel();
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    let errors: string[];
    let res: Response;
    try {
      res = await postWith();
      errors = logged.mock.calls.map((args) => args.join(" "));
    } finally {
      logged.mockRestore();
    }
    const problem = await expectProblem(res, 502, "model_error");
    expect(problem).toMatchObject({
      detail: "The model `llama-3.3-70b` does not exist",
      provider_status: 404,
    });
    // A 404 is not retried, and the agent's model is sent as it is.
    expect(sent).toEqual([expect.objectContaining({ model: "llama-3.3-70b" })]);
    expect(await usageEntries(ws.workspace.id)).toEqual([]);
    expect((await messageRows(conversation.id)).map((m) => m.role)).toEqual(["user"]);
    // Logged with the provider's status and message, never the key.
    const line = errors.find((e) => e.includes("model call failed"));
    expect(JSON.parse(line!)).toMatchObject({
      provider_status: 404,
      error: "The model `llama-3.3-70b` does not exist",
    });
    expect(errors.join("\n")).not.toContain(LLM_ENV.LLM_API_KEY);
  });

  it("a streaming request gets an error chunk carrying the provider's message; nothing billed", async () => {
    const { ws, conversation, postWith } = await pinnedToAMissingModel();
    const res = await postWith({ Accept: "text/event-stream" });
    expect(res.status).toBe(200);
    const chunks: UIMessageChunk[] = [];
    const reader = res.body!.pipeThrough(new TextDecoderStream()).pipeThrough(sseChunks()).getReader();
    for (let r = await reader.read(); !r.done; r = await reader.read()) chunks.push(r.value);
    expect(chunks).toContainEqual({ type: "error", errorText: "The model `llama-3.3-70b` does not exist" });
    await eventually(async () => (await messageRows(conversation.id)).length === 1);
    expect(await usageEntries(ws.workspace.id)).toEqual([]);
    // The conversation is free again for the next message.
    expect((await postWith()).status).toBe(502);
  });

  it("blanks the API key wherever a provider echoes it", async () => {
    const { postWith } = await pinnedToAMissingModel();
    llmServer.use(
      http.post(`${LLM_BASE_URL}/chat/completions`, () =>
        HttpResponse.json(
          { error: { message: `Incorrect API key provided: ${LLM_ENV.LLM_API_KEY}`, type: "invalid_request_error" } },
          { status: 401 },
        ),
      ),
    );
    const problem = await expectProblem(await postWith(), 502, "model_error");
    expect(problem).toMatchObject({ detail: "Incorrect API key provided: [redacted]", provider_status: 401 });
  });
});
