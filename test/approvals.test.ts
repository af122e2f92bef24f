import { env, exports } from "cloudflare:workers";
import {
  AbstractChat,
  type ChatInit,
  type ChatState,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  readUIMessageStream,
  type UIMessage,
  type UIMessageChunk,
} from "ai";
import { describe, expect, it } from "vitest";
import { ApprovalListSchema, DecisionResponseSchema } from "../src/conversations/approval-schemas";
import { ConversationSchema, ConversationWithMessagesSchema } from "../src/conversations/schemas";
import { requireApprovalOf } from "./support/agents";
import { call, expectProblem, freshIp, ORIGIN, parse } from "./support/api";
import { auditEvents } from "./support/audit";
import { eventually } from "./support/browser";
import { usageEntries } from "./support/ledger";
import { inRoom, roomMessages } from "./support/rooms";
import { scriptedModels, toolMessages } from "./support/scripted-llm";
import { addUser, signupWorkspace } from "./support/seed";
import { uiChunksOf } from "./support/ui-chat";

const { script } = scriptedModels();

const FILE = { name: "secret-plan.md", content: "launch code 0000 sk-live-SECRET" };

/** A workspace whose default agent waits for approval on `deliver_file`, and a conversation with it. */
async function setup(approvalRequired: string[] = ["deliver_file"]) {
  const ws = await signupWorkspace();
  const agentId = await requireApprovalOf(ws.adminToken, approvalRequired);
  const conversation = await parse(
    await call("POST", "/v1/api/conversations", { token: ws.adminToken, body: {} }),
    ConversationSchema,
  );
  return { ws, agentId, conversationId: conversation.id };
}

const post = (token: string, id: string, content: string) =>
  call("POST", `/v1/api/conversations/${id}/messages`, {
    token,
    body: { content },
    headers: { Accept: "text/event-stream" },
  });

/** The UI message stream chunks of an SSE answer, up to `[DONE]`. */
async function chunksOf(res: Response): Promise<UIMessageChunk[]> {
  expect(res.status).toBe(200);
  return uiChunksOf(await res.text());
}

/** What `useChat` builds from chunks (optionally continuing a message it has). */
async function messageOf(chunks: UIMessageChunk[], message?: UIMessage): Promise<UIMessage> {
  const stream = new ReadableStream<UIMessageChunk>({
    start(c) {
      for (const chunk of chunks) c.enqueue(chunk);
      c.close();
    },
  });
  let last: UIMessage | undefined;
  for await (const m of readUIMessageStream({ stream, message })) last = m;
  return last!;
}

const artifactsOf = (workspaceId: string) =>
  env.DB.prepare("SELECT name FROM artifacts WHERE workspace_id = ?1")
    .bind(workspaceId)
    .all<{ name: string }>()
    .then((r) => r.results.map((a) => a.name));

const turnState = (conversationId: string) =>
  inRoom(
    conversationId,
    (room) =>
      room.ctx.storage.sql.exec<{ state: string }>("SELECT state FROM turns ORDER BY position DESC").one().state,
  );

const pendingOf = async (token: string) =>
  (await parse(await call("GET", "/v1/api/approvals", { token }), ApprovalListSchema)).approvals;

const decide = (token: string, conversationId: string, approvalId: string, body: object) =>
  call("POST", `/v1/api/conversations/${conversationId}/approvals/${approvalId}`, { token, body });

/** A turn that asks for `deliver_file`, waits, and (once decided) answers `after`. */
async function pausedTurn(after = "Delivered.") {
  const s = await setup();
  const model = script({ tool: "deliver_file", args: FILE }, { text: after });
  const chunks = await chunksOf(await post(s.ws.adminToken, s.conversationId, "Write the plan to a file"));
  const [approval] = await pendingOf(s.ws.adminToken);
  return { ...s, model, chunks, approval: approval! };
}

const resumedTurn = (conversationId: string) =>
  eventually(async () => (await turnState(conversationId)) === "completed", 5_000);

describe("a tool call marked for approval pauses the turn", () => {
  // "A paused turn's stream emits the AI SDK `tool-approval-request` chunk … after the tool call's input, then `finish`"
  it("ends the stream with the approval request, runs nothing, stores the pending call and bills the steps so far", async () => {
    const { ws, conversationId, chunks, approval, model, agentId } = await pausedTurn();
    const types = chunks.map((c) => c.type);
    const request = chunks.find((c) => c.type === "tool-approval-request") as Extract<
      UIMessageChunk,
      { type: "tool-approval-request" }
    >;
    expect(request).toBeDefined();
    expect(types.indexOf("tool-approval-request")).toBeGreaterThan(types.indexOf("tool-input-available"));
    expect(types.at(-1)).toBe("finish");
    expect(types).not.toContain("tool-output-available");
    expect(model.requests).toHaveLength(1);
    expect(await artifactsOf(ws.workspace.id)).toEqual([]);
    expect(await turnState(conversationId)).toBe("awaiting_approval");

    // The stored reply's tool part waits as `approval-requested` with `approval: { id }`.
    const [, reply] = await roomMessages(conversationId);
    const part = reply!.parts.find((p) => p.type === "tool-deliver_file") as {
      state: string;
      approval: { id: string };
    };
    expect(part.state).toBe("approval-requested");
    expect(part.approval.id).toBe(request.approvalId);
    expect(approval).toMatchObject({
      id: request.approvalId,
      conversation_id: conversationId,
      turn_id: reply!.id,
      tool_name: "deliver_file",
      requested_by: ws.user.id,
      state: "pending",
      decided_by: null,
    });
    expect(approval.input_digest).toMatch(/^[0-9a-f]{64}$/);
    expect(Date.parse(approval.expires_at) - Date.parse(approval.requested_at)).toBe(604_800_000);
    expect(await usageEntries(ws.workspace.id)).toEqual([{ amount: -reply!.credits, reference: reply!.id }]);

    // "approval requests never include secrets in audit details": the digest, never the arguments.
    const [requested] = await auditEvents(ws.workspace.id, "approval.requested");
    expect(requested).toMatchObject({ agent_id: agentId, conversation_id: conversationId });
    expect(requested!.details).toMatchObject({ tool_name: "deliver_file", input_digest: approval.input_digest });
    expect(JSON.stringify(requested)).not.toContain("sk-live-SECRET");
    expect(JSON.stringify(requested)).not.toContain("secret-plan");
  });

  it("refuses a new message while the approval waits: 409 approval_pending", async () => {
    const { ws, conversationId } = await pausedTurn();
    await expectProblem(await post(ws.adminToken, conversationId, "anything else?"), 409, "approval_pending");
  });
});

describe("POST /v1/api/conversations/{id}/approvals/{approval_id}", () => {
  it("approve: the tool runs once, the turn completes as a second segment of the same turn, billed once more", async () => {
    const { ws, conversationId, approval, model } = await pausedTurn("Delivered the plan.");
    const res = await decide(ws.adminToken, conversationId, approval.id, { approved: true });
    expect(res.status).toBe(202);
    const body = await parse(res, DecisionResponseSchema);
    expect(body.approval).toMatchObject({ state: "approved", decided_by: ws.user.id });
    expect(body.turn_id).toBe(approval.turn_id);
    await resumedTurn(conversationId);

    expect(await artifactsOf(ws.workspace.id)).toEqual([FILE.name]);
    expect(model.requests).toHaveLength(2);
    expect(toolMessages(model.requests[1]!)).toHaveLength(1);
    const read = await parse(
      await call("GET", `/v1/api/conversations/${conversationId}`, { token: ws.adminToken }),
      ConversationWithMessagesSchema,
    );
    const reply = read.messages.at(-1)!;
    expect(reply.id).toBe(approval.turn_id);
    expect(reply.content).toBe("Delivered the plan.");
    expect(reply.tool_calls).toEqual([{ name: "deliver_file", ok: true }]);
    expect(reply.parts.find((p) => p.type === "tool-deliver_file")).toMatchObject({ state: "output-available" });
    // "Each segment bills once: ledger reference = message id, then `<message id>:2`"
    const entries = await usageEntries(ws.workspace.id);
    expect(entries.map((e) => e.reference).sort()).toEqual([reply.id, `${reply.id}:2`].sort());
    expect(entries.reduce((sum, e) => sum - e.amount, 0)).toBe(reply.usage.credits);

    // "a replay from the turn's start shows both segments": same message id, sequence numbers go on.
    const replay = await call("GET", `/v1/api/conversations/${conversationId}/stream?after=${reply.id}:0`, {
      token: ws.adminToken,
    });
    const text = await replay.text();
    const ids = [...text.matchAll(/^id: (.+)$/gm)].map((m) => m[1]!);
    expect(ids.map((id) => Number(id.split(":")[1]))).toEqual(ids.map((_, i) => i + 1));
    const starts = [...text.matchAll(/"type":"start","messageId":"([^"]+)"/g)].map((m) => m[1]);
    expect(starts).toEqual([reply.id, reply.id]);
    const rebuilt = await messageOf(await chunksOf(new Response(text)));
    expect(rebuilt.parts.find((p) => p.type === "tool-deliver_file")).toMatchObject({ state: "output-available" });

    const [decided] = await auditEvents(ws.workspace.id, "approval.decided");
    expect(decided!.details).toMatchObject({
      approval_id: approval.id,
      tool_name: "deliver_file",
      decision: "approved",
      decider: ws.user.id,
      input_digest: approval.input_digest,
    });
    expect(JSON.stringify(decided)).not.toContain("sk-live-SECRET");
    expect(await pendingOf(ws.adminToken)).toEqual([]);
  });

  it("deny: nothing runs and the model is told, with the reason", async () => {
    const { ws, conversationId, approval, model } = await pausedTurn("Understood, I will not.");
    const res = await decide(ws.adminToken, conversationId, approval.id, { approved: false, reason: "not today" });
    expect(res.status).toBe(202);
    await resumedTurn(conversationId);
    expect(await artifactsOf(ws.workspace.id)).toEqual([]);
    const told = toolMessages(model.requests[1]!);
    expect(told).toHaveLength(1);
    expect(JSON.stringify(told[0]!.content)).toContain("not today");
    expect(JSON.stringify(told[0]!.content)).toContain("denied");
    const [, reply] = await roomMessages(conversationId);
    expect(reply!.toolCalls).toEqual([{ name: "deliver_file", ok: false }]);
    const [decided] = await auditEvents(ws.workspace.id, "approval.decided");
    expect(decided!.details).toMatchObject({ decision: "denied", decider: ws.user.id });
  });

  it("a second decision on the same approval is 409 approval_decided", async () => {
    const { ws, conversationId, approval } = await pausedTurn();
    expect((await decide(ws.adminToken, conversationId, approval.id, { approved: true })).status).toBe(202);
    await expectProblem(
      await decide(ws.adminToken, conversationId, approval.id, { approved: false }),
      409,
      "approval_decided",
    );
    await resumedTurn(conversationId);
    expect(await artifactsOf(ws.workspace.id)).toEqual([FILE.name]);
  });

  it("after expiry: 410 approval_expired, and the call counts as denied", async () => {
    const { ws, conversationId, approval, model } = await pausedTurn("It expired.");
    await env.DB.prepare("UPDATE approvals SET expires_at = ?1 WHERE id = ?2")
      .bind(new Date(Date.now() - 1000).toISOString(), approval.id)
      .run();
    expect(await pendingOf(ws.adminToken)).toEqual([]);
    await expectProblem(
      await decide(ws.adminToken, conversationId, approval.id, { approved: true }),
      410,
      "approval_expired",
    );
    await resumedTurn(conversationId);
    expect(await artifactsOf(ws.workspace.id)).toEqual([]);
    expect(JSON.stringify(toolMessages(model.requests[1]!)[0]!.content)).toContain("in time");
    const [expired] = await auditEvents(ws.workspace.id, "approval.decided");
    expect(expired!.details).toMatchObject({ decision: "expired", decider: null });
    await expectProblem(
      await decide(ws.adminToken, conversationId, approval.id, { approved: true }),
      410,
      "approval_expired",
    );
  });

  it("an expired approval is touched by the next message: it counts as denied, the turn ends, then messages go on", async () => {
    const { ws, conversationId, approval, model } = await pausedTurn("Nobody answered, so I did not.");
    const past = new Date(Date.now() - 1000).toISOString();
    await env.DB.prepare("UPDATE approvals SET expires_at = ?1 WHERE id = ?2").bind(past, approval.id).run();
    await inRoom(conversationId, (room) =>
      room.ctx.storage.sql.exec("UPDATE turns SET context = json_set(context, '$.approvalExpiresAt', ?)", past),
    );
    // "an expired approval counts as denied when its turn is next touched"
    await expectProblem(await post(ws.adminToken, conversationId, "still there?"), 409, "turn_in_progress");
    await resumedTurn(conversationId);
    expect(await artifactsOf(ws.workspace.id)).toEqual([]);
    expect(JSON.stringify(toolMessages(model.requests[1]!)[0]!.content)).toContain("in time");
    expect((await post(ws.adminToken, conversationId, "still there?")).status).toBe(200);
  });

  it("a non-participant gets 404, and so does an unknown approval", async () => {
    const { ws, conversationId, approval } = await pausedTurn();
    const outsider = await addUser(ws.adminToken, "member", ["conversations:read", "conversations:write"]);
    await expectProblem(await decide(outsider.token, conversationId, approval.id, { approved: true }), 404);
    expect(await pendingOf(outsider.token)).toEqual([]);
    await expectProblem(await decide(ws.adminToken, conversationId, "nope0000nope0000", { approved: true }), 404);
    expect(await turnState(conversationId)).toBe("awaiting_approval");
  });

  it("resumes after the room was reset between the request and the decision", async () => {
    const { ws, conversationId, approval } = await pausedTurn("After the restart.");
    // Everything the room held in memory goes; its storage stays.
    await inRoom(conversationId, (room) => room.ctx.abort("reset")).catch(() => undefined);
    expect((await decide(ws.adminToken, conversationId, approval.id, { approved: true })).status).toBe(202);
    await resumedTurn(conversationId);
    expect(await artifactsOf(ws.workspace.id)).toEqual([FILE.name]);
    expect((await roomMessages(conversationId)).at(-1)!.content).toBe("After the restart.");
  });
});

describe("GET /v1/api/approvals", () => {
  it("lists what waits for the caller across conversations, oldest first", async () => {
    const s = await setup();
    script({ tool: "deliver_file", args: FILE });
    await chunksOf(await post(s.ws.adminToken, s.conversationId, "first"));
    const second = await parse(
      await call("POST", "/v1/api/conversations", { token: s.ws.adminToken, body: {} }),
      ConversationSchema,
    );
    await chunksOf(await post(s.ws.adminToken, second.id, "second"));
    const listed = await pendingOf(s.ws.adminToken);
    expect(listed.map((a) => a.conversation_id)).toEqual([s.conversationId, second.id]);
    expect(listed[0]!.requested_at <= listed[1]!.requested_at).toBe(true);
  });
});

/** `useChat` without React: the AI SDK's own chat, with a plain state, talking to the Worker. */
class Chat extends AbstractChat<UIMessage> {
  constructor(token: string, init: Omit<ChatInit<UIMessage>, "transport"> = {}) {
    const state: ChatState<UIMessage> = {
      status: "ready",
      error: undefined,
      messages: [],
      pushMessage(m) {
        this.messages = [...this.messages, m];
      },
      popMessage() {
        this.messages = this.messages.slice(0, -1);
      },
      replaceMessage(i, m) {
        this.messages = this.messages.map((old, j) => (j === i ? m : old));
      },
      snapshot: (thing) => structuredClone(thing),
    };
    const transport = new DefaultChatTransport<UIMessage>({
      api: `${ORIGIN}/v1/api/chat`,
      headers: { Authorization: `Bearer ${token}`, "CF-Connecting-IP": freshIp() },
      fetch: (input, init) => exports.default.fetch(new Request(input, init)),
    });
    super({ ...init, transport, state });
  }
}

type ToolPart = { type: string; state: string; approval?: { id: string; approved?: boolean } };
const deliverPart = (chat: Chat) =>
  chat.messages.at(-1)!.parts.find((p) => p.type === "tool-deliver_file") as ToolPart | undefined;

describe("POST /v1/api/chat: the decision from useChat's addToolApprovalResponse", () => {
  it("approve: the next request decides it and streams the resumed turn into the same assistant message", async () => {
    const { ws } = await setup();
    const model = script({ tool: "deliver_file", args: FILE }, { text: "Delivered through the chat." });
    const chat = new Chat(ws.adminToken, {
      id: `chat-${crypto.randomUUID()}`,
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    });
    await chat.sendMessage({ text: "Write the plan to a file" });
    const asked = deliverPart(chat)!;
    expect(asked.state).toBe("approval-requested");
    const [approval] = await pendingOf(ws.adminToken);
    expect(approval!.id).toBe(asked.approval!.id);
    expect(await artifactsOf(ws.workspace.id)).toEqual([]);

    await chat.addToolApprovalResponse({ id: asked.approval!.id, approved: true });
    await eventually(() => chat.status === "ready" && deliverPart(chat)?.state === "output-available");
    expect(chat.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(chat.messages.at(-1)!.id).toBe(approval!.turn_id);
    const text = chat.messages
      .at(-1)!
      .parts.filter((p) => p.type === "text")
      .map((p) => (p as { text: string }).text)
      .join("");
    expect(text).toBe("Delivered through the chat.");
    expect(await artifactsOf(ws.workspace.id)).toEqual([FILE.name]);
    expect(model.requests).toHaveLength(2);
    await resumedTurn(approval!.conversation_id);
    const entries = await usageEntries(ws.workspace.id);
    expect(entries.map((e) => e.reference).sort()).toEqual([approval!.turn_id, `${approval!.turn_id}:2`].sort());
    const [decided] = await auditEvents(ws.workspace.id, "approval.decided");
    expect(decided!.details).toMatchObject({ decision: "approved", decider: ws.user.id });
  });

  it("deny with a reason: the model sees it; a repeat of the same response is 409 approval_decided", async () => {
    const { ws } = await setup();
    const model = script({ tool: "deliver_file", args: FILE }, { text: "Fine, I will not." });
    const chat = new Chat(ws.adminToken, {
      id: `chat-${crypto.randomUUID()}`,
      sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    });
    await chat.sendMessage({ text: "Write the plan to a file" });
    const asked = deliverPart(chat)!;
    const responded = structuredClone(chat.messages);
    await chat.addToolApprovalResponse({ id: asked.approval!.id, approved: false, reason: "keep it offline" });
    await eventually(() => chat.status === "ready" && deliverPart(chat)?.state === "output-denied");
    expect(JSON.stringify(toolMessages(model.requests[1]!)[0]!.content)).toContain("keep it offline");
    expect(await artifactsOf(ws.workspace.id)).toEqual([]);

    const again = responded.map((m) =>
      m.role !== "assistant"
        ? m
        : {
            ...m,
            parts: m.parts.map((p) =>
              p.type === "tool-deliver_file"
                ? { ...p, state: "approval-responded", approval: { id: asked.approval!.id, approved: true } }
                : p,
            ),
          },
    );
    await expectProblem(
      await call("POST", "/v1/api/chat", {
        token: ws.adminToken,
        body: { id: chat.id, messages: again, trigger: "submit-message" },
      }),
      409,
      "approval_decided",
    );
  });
});
