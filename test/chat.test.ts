import { env, exports } from "cloudflare:workers";
import { DefaultChatTransport, type UIMessage } from "ai";
import { describe, expect, it } from "vitest";
import { balance, debit } from "../src/billing/ledger";
import {
  ConversationListSchema,
  ConversationSchema,
  ConversationWithMessagesSchema,
} from "../src/conversations/schemas";
import { call, expectProblem, freshIp, ORIGIN, parse } from "./support/api";
import { eventually } from "./support/browser";
import { usageEntries } from "./support/ledger";
import { roomMessages } from "./support/rooms";
import { scriptedModels } from "./support/scripted-llm";
import { signupWorkspace } from "./support/seed";
import { replyOf, sendChat, textOf, userMessage } from "./support/ui-chat";

const { script } = scriptedModels();

/** The AI SDK's own transport, as `useChat` builds it, talking to the Worker. */
const transportFor = (token: string) =>
  new DefaultChatTransport<UIMessage>({
    api: `${ORIGIN}/v1/api/chat`,
    headers: { Authorization: `Bearer ${token}`, "CF-Connecting-IP": freshIp() },
    fetch: (input, init) => exports.default.fetch(new Request(input, init)),
  });

async function conversationsOf(token: string) {
  return parse(await call("GET", "/v1/api/conversations", { token }), ConversationListSchema);
}

const usageCount = (workspaceId: string) => usageEntries(workspaceId).then((entries) => entries.length);

describe("POST /v1/api/chat: the AI SDK's DefaultChatTransport, unmodified", () => {
  it("opens a conversation for a new client chat id, keeps the user message's id, and continues it on the next message", async () => {
    const ws = await signupWorkspace();
    const transport = transportFor(ws.adminToken);
    const model = script({ text: "First answer." }, { text: "Second answer." });
    const first = [userMessage("clientMsg0000001", "Hello there")];
    const reply = await replyOf(await sendChat(transport, "chat-abc", first));
    expect(textOf(reply)).toBe("First answer.");
    const [conversation] = (await conversationsOf(ws.adminToken)).conversations;
    const messages = await roomMessages(conversation!.id);
    expect(messages.map((m) => [m.id, m.role])).toEqual([
      ["clientMsg0000001", "user"],
      [reply.id, "assistant"],
    ]);

    // The second message goes to the same conversation; the history is the server's.
    const second = await replyOf(
      await sendChat(transport, "chat-abc", [...first, reply, userMessage("clientMsg0000002", "And then?")]),
    );
    expect(textOf(second)).toBe("Second answer.");
    expect((await conversationsOf(ws.adminToken)).conversations).toHaveLength(1);
    expect(model.requests[1]!.messages.filter((m) => m.role !== "system").map((m) => m.content)).toEqual([
      "Hello there",
      "First answer.",
      "And then?",
    ]);
    // The conversation's messages carry parts, so a page can seed useChat after a reload.
    const read = await parse(
      await call("GET", `/v1/api/conversations/${conversation!.id}`, { token: ws.adminToken }),
      ConversationWithMessagesSchema,
    );
    expect(read.messages.map((m) => m.parts)).toEqual([
      [{ type: "text", text: "Hello there" }],
      expect.arrayContaining([expect.objectContaining({ type: "text", text: "First answer." })]),
      [{ type: "text", text: "And then?" }],
      expect.arrayContaining([expect.objectContaining({ type: "text", text: "Second answer." })]),
    ]);
  });

  it("takes an existing conversation's id as the chat id", async () => {
    const ws = await signupWorkspace();
    const created = await parse(
      await call("POST", "/v1/api/conversations", { token: ws.adminToken, body: {} }),
      ConversationSchema,
    );
    script({ text: "In the same one." });
    await replyOf(await sendChat(transportFor(ws.adminToken), created.id, [userMessage("m1", "hi")]));
    expect((await conversationsOf(ws.adminToken)).conversations.map((c) => c.id)).toEqual([created.id]);
    expect(await roomMessages(created.id)).toHaveLength(2);
  });

  it("regenerates in place: one reply remains, the question is asked again", async () => {
    const ws = await signupWorkspace();
    const transport = transportFor(ws.adminToken);
    const model = script({ text: "Take one." }, { text: "Take two." });
    const question = userMessage("q1", "Tell me a joke");
    const first = await replyOf(await sendChat(transport, "regen", [question]));
    const second = await replyOf(await sendChat(transport, "regen", [question], first.id));
    expect(textOf(second)).toBe("Take two.");
    const [conversation] = (await conversationsOf(ws.adminToken)).conversations;
    await eventually(async () => (await roomMessages(conversation!.id)).length === 2);
    expect((await roomMessages(conversation!.id)).map((m) => [m.id, m.content])).toEqual([
      ["q1", "Tell me a joke"],
      [second.id, "Take two."],
    ]);
    expect(model.requests[1]!.messages.filter((m) => m.role !== "system").map((m) => m.content)).toEqual([
      "Tell me a joke",
    ]);
  });

  it("answers a repeat of the same user message from the same turn: one model call, one debit", async () => {
    const ws = await signupWorkspace();
    const transport = transportFor(ws.adminToken);
    const model = script({ text: "Once.", delayMs: 100 });
    const send = () => sendChat(transport, "retry", [userMessage("same-id", "hi")]);
    const [a, b] = await Promise.all([send().then(replyOf), send().then(replyOf)]);
    expect(b.id).toBe(a.id);
    expect(textOf(b)).toBe("Once.");
    expect(model.requests).toHaveLength(1);
    await eventually(async () => (await usageCount(ws.workspace.id)) === 1);
    // The same id with other text is refused.
    const res = await call("POST", "/v1/api/chat", {
      token: ws.adminToken,
      body: { id: "retry", messages: [userMessage("same-id", "something else")], trigger: "submit-message" },
    });
    await expectProblem(res, 422, "idempotency_key_reused");
  });

  it("reconnectToStream: null when idle, the running turn from its start otherwise", async () => {
    const ws = await signupWorkspace();
    const transport = transportFor(ws.adminToken);
    expect(await transport.reconnectToStream({ chatId: "never-used" })).toBeNull();
    script({ text: "one two three four five six", wordDelayMs: 30 });
    const running = await sendChat(transport, "resumable", [userMessage("r1", "count")]);
    const resumed = await transport.reconnectToStream({ chatId: "resumable" });
    expect(resumed).not.toBeNull();
    const [a, b] = await Promise.all([replyOf(running), replyOf(resumed!)]);
    expect(textOf(b)).toBe("one two three four five six");
    expect(b.id).toBe(a.id);
    expect(await transport.reconnectToStream({ chatId: "resumable" })).toBeNull();
  });

  it("takes another workspace's conversation id as a mere client id: a new conversation, the other untouched", async () => {
    const owner = await signupWorkspace();
    const theirs = await parse(
      await call("POST", "/v1/api/conversations", { token: owner.adminToken, body: {} }),
      ConversationSchema,
    );
    const intruder = await signupWorkspace();
    script({ text: "Yours, not theirs." });
    await replyOf(await sendChat(transportFor(intruder.adminToken), theirs.id, [userMessage("x1", "hi")]));
    const [mine] = (await conversationsOf(intruder.adminToken)).conversations;
    expect(mine!.id).not.toBe(theirs.id);
    expect(await roomMessages(mine!.id)).toHaveLength(2);
    expect(await roomMessages(theirs.id)).toHaveLength(0);
  });

  it("answers 503 without a model, 402 without credits and 404 for an unknown agent, opening no conversation", async () => {
    const ws = await signupWorkspace();
    const body = (extra: Record<string, unknown> = {}) => ({
      id: "refused",
      messages: [userMessage("m1", "hi")],
      trigger: "submit-message",
      ...extra,
    });
    await expectProblem(
      await call("POST", "/v1/api/chat", { token: ws.adminToken, body: body() }),
      503,
      "model_not_configured",
    );
    const model = script({ text: "never" });
    await expectProblem(
      await call("POST", "/v1/api/chat", { token: ws.adminToken, body: body({ agent_slug: "nobody" }) }),
      404,
    );
    await debit(env, ws.workspace.id, (await balance(env, ws.workspace.id)) + 500, "drain");
    await expectProblem(
      await call("POST", "/v1/api/chat", { token: ws.adminToken, body: body() }),
      402,
      "insufficient_credits",
    );
    expect(model.requests).toHaveLength(0);
    expect((await conversationsOf(ws.adminToken)).conversations).toEqual([]);
  });

  it("answers 409 turn_in_progress for a second message while the chat's turn runs", async () => {
    const ws = await signupWorkspace();
    script({ text: "slow answer", delayMs: 300 });
    const send = (id: string) =>
      call("POST", "/v1/api/chat", {
        token: ws.adminToken,
        body: { id: "busy", messages: [userMessage(id, `question ${id}`)], trigger: "submit-message" },
      });
    const first = await send("q1");
    expect(first.status).toBe(200);
    await expectProblem(await send("q2"), 409, "turn_in_progress");
    await first.body?.cancel();
  });

  it("refuses a body with no user message (400) and regenerating an unknown chat (400)", async () => {
    const ws = await signupWorkspace();
    await expectProblem(
      await call("POST", "/v1/api/chat", {
        token: ws.adminToken,
        body: { id: "c", messages: [{ id: "a1", role: "assistant", parts: [{ type: "text", text: "hi" }] }] },
      }),
      400,
      "no_user_message",
    );
    await expectProblem(
      await call("POST", "/v1/api/chat", {
        token: ws.adminToken,
        body: { id: "nobody", messages: [userMessage("u", "again")], trigger: "regenerate-message" },
      }),
      400,
      "nothing_to_regenerate",
    );
  });
});
