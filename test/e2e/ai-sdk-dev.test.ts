/**
 * The AI SDK's own `DefaultChatTransport`, unmodified, against `wrangler dev`: what `useChat`
 * does in a browser, driven from Node with the PAT in `headers`. The turns run in wrangler's
 * Durable Objects; the model is a fake OpenAI-compatible server in this process.
 */
import type { Server } from "node:http";
import { DefaultChatTransport, type UIMessage } from "ai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { replyOf, sendChat, textOf, userMessage } from "../support/ui-chat";
import { SLOW, startChatDev } from "./chat-model";
import { apiJson, type DevServer, signupToken } from "./server";

const PORT = Number(process.env.E2E_AI_SDK_PORT ?? 8811);
/** The origin examples/chat is served from in the browser test; passed here so both run alike. */
const PAGE_ORIGIN = "http://localhost:5173";

let dev: DevServer;
let model: Server;
let token: string;
let transport: DefaultChatTransport<UIMessage>;

const user = userMessage;
const send = (chatId: string, messages: UIMessage[], regenerate?: string) =>
  sendChat(transport, chatId, messages, regenerate);

const api = <T>(path: string, json?: unknown) => apiJson<T>(dev.origin, token, path, json);
type Conversation = { id: string; messages: { id: string; role: string; parts: { type: string; text?: string }[] }[] };
const conversationIds = async () =>
  (await api<{ conversations: { id: string }[] }>("/v1/api/conversations")).conversations.map((c) => c.id);

beforeAll(async () => {
  ({ dev, model } = await startChatDev(PORT, "chat-e2e", PAGE_ORIGIN));
  token = await signupToken(dev.origin, "AI SDK E2E");
  transport = new DefaultChatTransport<UIMessage>({
    api: `${dev.origin}/v1/api/chat`,
    headers: { Authorization: `Bearer ${token}` },
  });
});

afterAll(async () => {
  await dev?.stop();
  await new Promise((resolve) => model?.close(resolve));
});

describe("DefaultChatTransport against wrangler dev", () => {
  it("opens a conversation for a new client chat id and continues its history with the next message", async () => {
    const before = await conversationIds();
    const first = [user("e2eClientMsg0001", "Hello")];
    const reply = await replyOf(await send("e2e-client-chat", first));
    expect(textOf(reply)).toMatch(/^Answer \d+$/);
    const opened = (await conversationIds()).filter((id) => !before.includes(id));
    expect(opened).toHaveLength(1);

    const second = await replyOf(
      await send("e2e-client-chat", [...first, reply, user("e2eClientMsg0002", "And then?")]),
    );
    expect(textOf(second)).toMatch(/^Answer \d+$/);
    expect(textOf(second)).not.toBe(textOf(reply));
    // Same conversation; "the history is the conversation's own", with the client's message ids.
    expect((await conversationIds()).filter((id) => !before.includes(id))).toEqual(opened);
    const read = await api<Conversation>(`/v1/api/conversations/${opened[0]}`);
    expect(read.messages.map((m) => [m.id, m.role])).toEqual([
      ["e2eClientMsg0001", "user"],
      [reply.id, "assistant"],
      ["e2eClientMsg0002", "user"],
      [second.id, "assistant"],
    ]);
  });

  it("takes an existing conversation's id as the chat id", async () => {
    const created = await api<{ id: string }>("/v1/api/conversations", {});
    const before = await conversationIds();
    const reply = await replyOf(await send(created.id, [user("e2eExistingMsg01", "Hi")]));
    expect(textOf(reply)).toMatch(/^Answer \d+$/);
    expect(await conversationIds()).toEqual(before);
    const read = await api<Conversation>(`/v1/api/conversations/${created.id}`);
    expect(read.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
  });

  it("regenerate-message answers the question again and leaves one reply", async () => {
    const created = await api<{ id: string }>("/v1/api/conversations", {});
    const question = user("e2eRegenMsg00001", "Tell me a joke");
    const first = await replyOf(await send(created.id, [question]));
    const again = await replyOf(await send(created.id, [question, first], first.id));
    expect(textOf(again)).toMatch(/^Answer \d+$/);
    expect(textOf(again)).not.toBe(textOf(first));
    const read = await api<Conversation>(`/v1/api/conversations/${created.id}`);
    expect(read.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(read.messages[1]!.parts).toContainEqual(expect.objectContaining({ type: "text", text: textOf(again) }));
  });

  it("reconnectToStream is null when idle and replays the running turn's stream from its start", async () => {
    // "204 when no turn runs or the chat id names no conversation of the caller yet"
    expect(await transport.reconnectToStream({ chatId: "e2e-never-used" })).toBeNull();

    const chatId = "e2e-resume-chat";
    const original = (await send(chatId, [user("e2eResumeMsg0001", "Answer slowly")])).getReader();
    // Read until the answer is under way, then connect a second time as a reloaded page does.
    let seen = "";
    while (!seen.includes("word3")) {
      const { value, done } = await original.read();
      if (done) throw new Error("the turn ended before the resume");
      if (value.type === "text-delta") seen += value.delta;
    }
    const resumed = await transport.reconnectToStream({ chatId });
    expect(resumed).not.toBeNull();
    const replayed = await replyOf(resumed!);
    expect(textOf(replayed)).toBe(SLOW);
    while (!(await original.read()).done) {
      // the first stream ends too
    }
    // After the turn's last event: idle again.
    expect(await transport.reconnectToStream({ chatId })).toBeNull();
  });
});
