import { env } from "cloudflare:workers";
import { readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import { describe, expect, it } from "vitest";
import { ensureMonthlyGrant, monthlyGrantReference } from "../src/billing/ledger";
import {
  forgetUser,
  knownParticipant,
  PARTICIPANT_TTL_MS,
  rememberParticipant,
} from "../src/conversations/participants";
import { ConversationSchema, TurnResponseSchema } from "../src/conversations/schemas";
import { requireParticipant } from "../src/conversations/service";
import { postChatMessage, postMessage, type TurnContext } from "../src/conversations/turns";
import { ApiError } from "../src/platform/problem";
import { createAgent } from "./support/agents";
import { call, expectProblem, parse } from "./support/api";
import { auditEvents } from "./support/audit";
import { eventually } from "./support/browser";
import { countingD1 } from "./support/d1-count";
import { roomMessages } from "./support/rooms";
import { scriptedModels } from "./support/scripted-llm";
import { signupWorkspace } from "./support/seed";
import { uiChunksOf } from "./support/ui-chat";
import { unique } from "./support/unique";

// What a turn asks of D1, and when: the Worker's side in one round trip before the room (issue
// 25: "one D1 read before the model, one batch after"), the directory written with the turn's end.

const { script } = scriptedModels();

type Ws = Awaited<ReturnType<typeof signupWorkspace>>;

/** A workspace whose grant of the month is made: its turns read D1 once before the room. */
async function grantedWorkspace() {
  const ws = await signupWorkspace();
  await ensureMonthlyGrant(env, ws.workspace.id);
  return ws;
}

async function conversationOf(token: string) {
  return parse(await call("POST", "/v1/api/conversations", { token, body: {} }), ConversationSchema);
}

/** The caller of a route, as `turnContext` makes it, on the given env. */
const turnOf = (ws: Ws, e: Env): TurnContext => ({
  env: e,
  workspace: { id: ws.workspace.id, name: ws.workspace.name },
  userId: ws.user.id,
  actor: { kind: "user", id: ws.user.id },
  origin: "https://svc.test",
});

const directory = async (conversationId: string) => {
  const row = await env.DB.prepare("SELECT message_count, last_message_at FROM conversations WHERE id = ?1")
    .bind(conversationId)
    .first<{ message_count: number; last_message_at: string }>();
  const participants = await env.DB.prepare(
    "SELECT DISTINCT last_message_at AS at FROM conversation_participants WHERE conversation_id = ?1",
  )
    .bind(conversationId)
    .all<{ at: string }>();
  return { ...row!, participants: participants.results.map((p) => p.at) };
};

describe("a turn's D1 round trips before its room", () => {
  it("POST …/messages: the conversation, the agent, its skills and servers and the credits in one statement", async () => {
    const ws = await grantedWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ text: "Hello." });
    const d1 = countingD1();
    const turn = await postMessage(turnOf(ws, d1.env), c.id, { content: "hi" }, { stream: false });
    expect(d1.statements()).toBe(1);
    expect(d1.take()).toBe(1);
    expect(turn).toMatchObject({ kind: "reply", userMessage: { content: "hi" }, reply: { content: "Hello." } });
  });

  it("an agent named by an alias comes in the same round trip; an unknown one is 404 before the room", async () => {
    const ws = await grantedWorkspace();
    const c = await conversationOf(ws.adminToken);
    const alias = `nick-${unique()}`;
    const agent = await createAgent(ws.adminToken, {
      slug: `helper-${unique()}`,
      display_name: "Helper",
      aliases: [alias],
    });
    script({ text: "At your service." });
    const d1 = countingD1();
    const turn = await postMessage(turnOf(ws, d1.env), c.id, { content: "hi", agent_slug: alias }, { stream: false });
    expect(d1.take()).toBe(1);
    expect(turn).toMatchObject({ kind: "reply", reply: { agent_id: agent.id, content: "At your service." } });

    const unknown = postMessage(
      turnOf(ws, d1.env),
      c.id,
      { content: "hello?", agent_slug: "nobody" },
      { stream: false },
    );
    await expect(unknown).rejects.toMatchObject({ status: 404 });
    expect(d1.take()).toBe(1);
    expect(await roomMessages(c.id)).toHaveLength(2);
  });

  it("a conversation the caller does not take part in is 404, in that one round trip", async () => {
    const ws = await grantedWorkspace();
    const other = await signupWorkspace();
    const c = await conversationOf(other.adminToken);
    const d1 = countingD1();
    const turn = postMessage(turnOf(ws, d1.env), c.id, { content: "hi" }, { stream: false });
    await expect(turn).rejects.toBeInstanceOf(ApiError);
    await expect(turn).rejects.toMatchObject({ status: 404 });
    expect(d1.take()).toBe(1);
  });

  it("POST /v1/api/chat: a known chat's conversation is read in the turn's round trip; an unknown chat id stores nothing", async () => {
    const ws = await signupWorkspace();
    const chatId = `chat-${unique()}`;
    script({ text: "First." });
    const opened = await call("POST", "/v1/api/chat", {
      token: ws.adminToken,
      body: {
        id: chatId,
        trigger: "submit-message",
        messages: [{ id: `m1-${unique()}`, role: "user", parts: [{ type: "text", text: "one" }] }],
      },
    });
    expect(opened.status).toBe(200);
    await opened.text();

    script({ text: "Second." });
    const d1 = countingD1();
    const userMessageId = `m2-${unique()}`;
    const turn = await postChatMessage(
      turnOf(ws, d1.env),
      chatId,
      { content: "two" },
      { stream: false, idempotencyKey: `message:${userMessageId}`, userMessageId },
    );
    expect(d1.statements()).toBe(1);
    expect(d1.take()).toBe(1);
    expect(turn).toMatchObject({ kind: "reply", userMessage: { id: userMessageId }, reply: { content: "Second." } });

    const unknown = `chat-${unique()}`;
    expect(await postChatMessage(turnOf(ws, d1.env), unknown, { content: "x" }, { stream: false })).toBeNull();
    expect(d1.take()).toBe(1);
    const row = await env.DB.prepare("SELECT id FROM conversations WHERE client_id = ?1").bind(unknown).first();
    expect(row).toBeNull();
  });

  it("that round trip also tells the memory tools the agent's handles and the user's freeze, an alias's included", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    const alias = `nick-${unique()}`;
    const agent = await createAgent(ws.adminToken, { slug: `aka-${unique()}`, display_name: "Aka", aliases: [alias] });
    const model = script({ text: "ok" });
    const offered = (i: number) => (model.requests[i]!.tools ?? []).map((t) => t.function.name);
    const ask = () =>
      call("POST", `/v1/api/conversations/${c.id}/messages`, {
        token: ws.adminToken,
        body: { content: "hi", agent_slug: agent.slug },
      }).then((res) => parse(res, TurnResponseSchema));
    await ask();
    expect(offered(0)).toEqual(expect.arrayContaining(["recall", "remember"]));
    // A freeze kept under the agent's alias (not its slug) still freezes it.
    expect((await call("PUT", `/v1/memory/freeze/${alias}`, { token: ws.adminToken, body: {} })).status).toBe(200);
    await env.DB.prepare("UPDATE memory_freezes SET agent_slug = ?1 WHERE user_id = ?2").bind(alias, ws.user.id).run();
    await ask();
    expect(offered(1)).not.toContain("recall");
    expect(offered(1)).not.toContain("remember");
  });

  it("this month's free grant: due in that read, then made once (a round trip of its own), with its billing.credit event", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    await env.DB.prepare("DELETE FROM credit_ledger WHERE workspace_id = ?1 AND kind = 'monthly_grant'")
      .bind(ws.workspace.id)
      .run();
    const granted = (await auditEvents(ws.workspace.id, "billing.credit")).length;
    script({ text: "Paid for." });
    const d1 = countingD1();
    for (const content of ["one", "two"]) {
      const turn = await postMessage(turnOf(ws, d1.env), c.id, { content }, { stream: false });
      expect(turn).toMatchObject({ kind: "reply", reply: { content: "Paid for." } });
    }
    // The month's first turn: the read, then the grant; the second: the read alone.
    expect(d1.take()).toBe(3);
    const { results } = await env.DB.prepare(
      "SELECT amount, reference FROM credit_ledger WHERE workspace_id = ?1 AND kind = 'monthly_grant'",
    )
      .bind(ws.workspace.id)
      .all();
    expect(results).toEqual([{ amount: 100, reference: monthlyGrantReference(new Date()) }]);
    expect(await auditEvents(ws.workspace.id, "billing.credit")).toHaveLength(granted + 1);
  });
});

describe("the directory learns of a turn's messages", () => {
  it("a quick turn writes its question and its reply with the turn's end: two messages, the reply's time", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ text: "Quick." });
    const turn = await parse(
      await call("POST", `/v1/api/conversations/${c.id}/messages`, { token: ws.adminToken, body: { content: "q" } }),
      TurnResponseSchema,
    );
    expect(await directory(c.id)).toEqual({
      message_count: 2,
      last_message_at: turn.reply.created_at,
      participants: [turn.reply.created_at],
    });
  });

  it("a turn running longer than a second shows its question while it runs, and counts two at its end", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ text: "Slow answer.", delayMs: 1_800 });
    const posted = call("POST", `/v1/api/conversations/${c.id}/messages`, {
      token: ws.adminToken,
      body: { content: "q" },
    });
    await eventually(async () => (await directory(c.id)).message_count === 1, 1_500);
    const turn = await parse(await posted, TurnResponseSchema);
    expect(await directory(c.id)).toMatchObject({ message_count: 2, last_message_at: turn.reply.created_at });
  });

  it("a turn whose model fails counts its question (it stays in the conversation)", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ status: 400 });
    await expectProblem(
      await call("POST", `/v1/api/conversations/${c.id}/messages`, { token: ws.adminToken, body: { content: "q" } }),
      502,
      "model_error",
    );
    expect(await roomMessages(c.id)).toHaveLength(1);
    expect((await directory(c.id)).message_count).toBe(1);
  });
});

describe("the reply's parts", () => {
  it("are what an AI SDK client builds from the turn's stream: a tool call with its input and output, then the text", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ tool: "deliver_file", args: { name: "notes.md", content: "# Notes" } }, { text: "Here are your notes." });
    const res = await call("POST", `/v1/api/conversations/${c.id}/messages`, {
      token: ws.adminToken,
      body: { content: "Write my notes" },
      headers: { Accept: "text/event-stream" },
    });
    const chunks = uiChunksOf(await res.text());
    let built: UIMessage | undefined;
    const stream = new ReadableStream<UIMessageChunk>({
      start(controller) {
        for (const chunk of chunks) controller.enqueue(chunk);
        controller.close();
      },
    });
    for await (const message of readUIMessageStream({ stream })) built = message;
    expect(built!.parts.map((p) => p.type)).toEqual(["step-start", "tool-deliver_file", "step-start", "text"]);
    await eventually(async () => (await roomMessages(c.id)).length === 2);
    const [, reply] = await roomMessages(c.id);
    expect(reply!.parts).toEqual(built!.parts);
  });
});

describe("a resumed stream's participant check", () => {
  it("reuses this isolate's check for a few seconds: no D1 read, until the entry expires", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    const d1 = countingD1();
    await requireParticipant(d1.env, ws.workspace.id, ws.user.id, c.id);
    expect(d1.take()).toBe(1);
    await requireParticipant(d1.env, ws.workspace.id, ws.user.id, c.id);
    expect(d1.take()).toBe(0);
    expect(knownParticipant(ws.workspace.id, ws.user.id, c.id, Date.now() + PARTICIPANT_TTL_MS + 1)).toBe(false);
  });

  it("never remembers a refusal, and forgets a deleted conversation and an erased user at once", async () => {
    const ws = await signupWorkspace();
    const other = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    const d1 = countingD1();
    for (let i = 0; i < 2; i++)
      await expect(requireParticipant(d1.env, other.workspace.id, other.user.id, c.id)).rejects.toMatchObject({
        status: 404,
      });
    expect(d1.take()).toBe(2);

    rememberParticipant(ws.workspace.id, ws.user.id, c.id);
    forgetUser(ws.workspace.id, ws.user.id);
    expect(knownParticipant(ws.workspace.id, ws.user.id, c.id)).toBe(false);

    await requireParticipant(env, ws.workspace.id, ws.user.id, c.id);
    expect((await call("DELETE", `/v1/api/conversations/${c.id}`, { token: ws.adminToken })).status).toBe(200);
    const resumed = await call("GET", `/v1/api/conversations/${c.id}/stream`, { token: ws.adminToken });
    await expectProblem(resumed, 404);
  });
});
