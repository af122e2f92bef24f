import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { balance, debit } from "../src/billing/ledger";
import { ConversationSchema } from "../src/conversations/schemas";
import { ChatCompletionChunkSchema, ChatCompletionSchema, ModelListSchema } from "../src/openai/schemas";
import { openAIErrorSchema } from "../src/platform/openai-error";
import { createAgent } from "./support/agents";
import { call, parse } from "./support/api";
import { auditEvents } from "./support/audit";
import { eventually } from "./support/browser";
import { roomMessages } from "./support/rooms";
import { scriptedModels } from "./support/scripted-llm";
import { addUser, signupWorkspace } from "./support/seed";

/**
 * "OpenAI-compatible: `GET /v1/models` (agents:read) … `POST /v1/chat/completions`
 * (conversations:write) … Errors on these two routes use OpenAI's shape
 * `{ error: { message, type, code, param } }`: unknown model 404 `model_not_found`, 402
 * `insufficient_credits`, 401 `invalid_api_key`."
 */

const { script } = scriptedModels();

const REPLY = "Rivers carry water to the sea.";
const complete = (token: string | undefined, body: unknown, headers: Record<string, string> = {}) =>
  call("POST", "/v1/chat/completions", { token, body, headers });

/** The error in OpenAI's shape, with the status and code expected. */
async function expectOpenAiError(res: Response, status: number, code: string) {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  expect(res.headers.get("Content-Type")).toMatch(/^application\/json/);
  const body = openAIErrorSchema().parse(JSON.parse(text));
  expect(body.error.code, text).toBe(code);
  return body.error;
}

const conversationCount = (workspaceId: string) =>
  env.DB.prepare("SELECT COUNT(*) AS n FROM conversations WHERE workspace_id = ?1")
    .bind(workspaceId)
    .first<{ n: number }>()
    .then((r) => r!.n);

/** The `data:` payloads of an SSE body, `[DONE]` kept as the string. */
async function sseData(res: Response): Promise<unknown[]> {
  const text = await res.text();
  return text
    .split("\n\n")
    .filter(Boolean)
    .map((event) => event.replace(/^data: /, ""))
    .map((data) => (data === "[DONE]" ? data : JSON.parse(data)));
}

describe("GET /v1/models", () => {
  it("lists the enabled agents by slug, owned by the workspace's slug; `default` is not listed", async () => {
    const ws = await signupWorkspace();
    const agent = await createAgent(ws.adminToken, { slug: "sales-desk", display_name: "Sales" });
    const off = await createAgent(ws.adminToken, { slug: "retired", display_name: "Retired" });
    await call("DELETE", `/v1/agents/${off.id}`, { token: ws.adminToken });
    const reader = await addUser(ws.adminToken, "member", ["agents:read"]);

    const res = await call("GET", "/v1/models", { token: reader.token });
    expect(res.status).toBe(200);
    const list = await parse(res, ModelListSchema);
    expect(list.object).toBe("list");
    expect(list.data.map((m) => m.id).sort()).toEqual(["assistant", "sales-desk"]);
    expect(list.data.find((m) => m.id === "sales-desk")).toEqual({
      id: "sales-desk",
      object: "model",
      created: Math.floor(Date.parse(agent.created_at) / 1000),
      owned_by: ws.workspace.slug,
    });
  });

  it("answers 401 invalid_api_key without a token (with the Bearer challenge) and 403 without agents:read", async () => {
    const res = await call("GET", "/v1/models");
    await expectOpenAiError(res, 401, "invalid_api_key");
    expect(res.headers.get("WWW-Authenticate")).toMatch(/^Bearer /);
    const ws = await signupWorkspace();
    const writer = await addUser(ws.adminToken, "member", ["conversations:write"]);
    const denied = await expectOpenAiError(
      await call("GET", "/v1/models", { token: writer.token }),
      403,
      "insufficient_scope",
    );
    expect(denied.type).toBe("invalid_request_error");
  });
});

describe("POST /v1/chat/completions", () => {
  it("runs one turn in a new standard conversation and answers a chat.completion with usage and conversation_id", async () => {
    const ws = await signupWorkspace();
    const model = script({ text: REPLY });
    const res = await complete(ws.adminToken, {
      model: "default",
      messages: [
        { role: "system", content: "You are a pirate." },
        { role: "user", content: "Where do rivers go?" },
      ],
    });
    expect(res.status).toBe(200);
    const completion = await parse(res, ChatCompletionSchema);
    expect(completion).toMatchObject({
      object: "chat.completion",
      model: "assistant",
      choices: [{ index: 0, message: { role: "assistant", content: REPLY }, finish_reason: "stop" }],
      // "Usage numbers: the reply's usage.input_tokens/output_tokens" (the fake provider reports 10 and 5).
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    });
    expect(res.headers.get("X-Conversation-Id")).toBe(completion.conversation_id);

    // "Conversations made through `/v1/chat/completions` are `standard`."
    const conversation = await parse(
      await call("GET", `/v1/api/conversations/${completion.conversation_id}`, { token: ws.adminToken }),
      ConversationSchema,
    );
    expect(conversation).toMatchObject({ mode: "standard", agent_slug: "assistant" });
    expect((await roomMessages(completion.conversation_id)).map((m) => [m.role, m.content])).toEqual([
      ["user", "Where do rivers go?"],
      ["assistant", REPLY],
    ]);
    expect(completion.id).toBe(`chatcmpl-${(await roomMessages(completion.conversation_id))[1]!.id}`);
    // The system message is the client's, not the agent's: the agent keeps its own instructions.
    expect(JSON.stringify(model.requests[0]!.messages)).not.toContain("pirate");

    const created = await auditEvents(ws.workspace.id, "conversation.create");
    expect(created.map((e) => [e.target, e.actor_id, e.details.mode])).toEqual([
      [`conversation:${completion.conversation_id}`, ws.user.id, "standard"],
    ]);
    const turns = await auditEvents(ws.workspace.id, "conversation.turn");
    expect(turns.map((e) => e.target)).toEqual([`conversation:${completion.conversation_id}`]);
  });

  it("sends the earlier messages to the model as the turn's history, and answers with the agent named by `model`", async () => {
    const ws = await signupWorkspace();
    await createAgent(ws.adminToken, { slug: "geographer", display_name: "Geographer" });
    const model = script({ text: REPLY });
    const res = await complete(ws.adminToken, {
      model: "geographer",
      messages: [
        { role: "user", content: "Name a river." },
        { role: "assistant", content: "The Danube." },
        { role: "user", content: [{ type: "text", text: "Where does it end?" }] },
      ],
    });
    const completion = await parse(res, ChatCompletionSchema);
    expect(completion.model).toBe("geographer");
    const sent = model.requests[0]!.messages.filter((m) => m.role === "user" || m.role === "assistant");
    expect(sent.map((m) => [m.role, m.content])).toEqual([
      ["user", "Name a river."],
      ["assistant", "The Danube."],
      ["user", "Where does it end?"],
    ]);
  });

  it("streams chat.completion.chunk events: the role, the text as deltas, a finish chunk, the usage chunk, [DONE]", async () => {
    const ws = await signupWorkspace();
    script({ text: REPLY });
    const res = await complete(ws.adminToken, {
      model: "assistant",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "Where do rivers go?" }],
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toMatch(/^text\/event-stream/);
    const events = await sseData(res);
    expect(events.at(-1)).toBe("[DONE]");
    const chunks = events.slice(0, -1).map((e) => ChatCompletionChunkSchema.parse(e));
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
    expect(chunks[0]!.choices[0]!.delta.role).toBe("assistant");
    const text = chunks.flatMap((c) => c.choices.map((ch) => ch.delta.content ?? "")).join("");
    expect(text).toBe(REPLY);
    // The text arrives in more than one delta, as the model streamed it.
    expect(chunks.filter((c) => c.choices[0]?.delta.content).length).toBeGreaterThan(1);
    const finish = chunks.at(-2)!;
    expect(finish.choices).toEqual([{ index: 0, delta: {}, finish_reason: "stop" }]);
    // "usage chunk with `stream_options.include_usage`": empty choices, the turn's usage.
    const usage = chunks.at(-1)!;
    expect(usage.choices).toEqual([]);
    expect(usage.usage).toEqual({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 });
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
    const conversationId = chunks[0]!.conversation_id;
    expect(res.headers.get("X-Conversation-Id")).toBe(conversationId);
    expect((await roomMessages(conversationId)).map((m) => m.content)).toEqual(["Where do rivers go?", REPLY]);
  });

  it("keeps the turn going in its room when the client stops reading the stream", async () => {
    const ws = await signupWorkspace();
    script({ text: "One two three four five six seven eight.", wordDelayMs: 30 });
    const res = await complete(ws.adminToken, {
      model: "default",
      stream: true,
      messages: [{ role: "user", content: "Count" }],
    });
    const conversationId = res.headers.get("X-Conversation-Id")!;
    const reader = res.body!.getReader();
    await reader.read();
    await reader.cancel();
    await eventually(async () => (await roomMessages(conversationId)).length === 2);
    expect((await roomMessages(conversationId))[1]!.content).toBe("One two three four five six seven eight.");
  });

  it("streams without a usage chunk when include_usage is not asked for", async () => {
    const ws = await signupWorkspace();
    script({ text: REPLY });
    const events = await sseData(
      await complete(ws.adminToken, { model: "default", stream: true, messages: [{ role: "user", content: "Hi" }] }),
    );
    const chunks = events.slice(0, -1).map((e) => ChatCompletionChunkSchema.parse(e));
    expect(chunks.every((c) => c.usage === undefined && c.choices.length === 1)).toBe(true);
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe("stop");
  });

  it("continues the conversation named by X-Conversation-Id, with its stored history; another user's is a 404", async () => {
    const ws = await signupWorkspace();
    const model = script({ text: "First answer." }, { text: "Second answer." });
    const first = await parse(
      await complete(ws.adminToken, { model: "default", messages: [{ role: "user", content: "First question" }] }),
      ChatCompletionSchema,
    );
    const second = await parse(
      await complete(
        ws.adminToken,
        { model: "default", messages: [{ role: "user", content: "Second question" }] },
        { "X-Conversation-Id": first.conversation_id },
      ),
      ChatCompletionSchema,
    );
    expect(second.conversation_id).toBe(first.conversation_id);
    expect(second.choices[0]!.message.content).toBe("Second answer.");
    const sent = model.requests[1]!.messages.filter((m) => m.role === "user" || m.role === "assistant");
    expect(sent.map((m) => m.content)).toEqual(["First question", "First answer.", "Second question"]);
    expect(await roomMessages(first.conversation_id)).toHaveLength(4);
    expect(await conversationCount(ws.workspace.id)).toBe(1);

    const stranger = await addUser(ws.adminToken, "member", ["conversations:write"]);
    const error = await expectOpenAiError(
      await complete(
        stranger.token,
        { model: "default", messages: [{ role: "user", content: "Let me in" }] },
        { "X-Conversation-Id": first.conversation_id },
      ),
      404,
      "not_found",
    );
    expect(error.type).toBe("invalid_request_error");
    expect(await roomMessages(first.conversation_id)).toHaveLength(4);
  });

  it("answers an unknown model with 404 model_not_found and creates nothing", async () => {
    const ws = await signupWorkspace();
    const model = script({ text: REPLY });
    const error = await expectOpenAiError(
      await complete(ws.adminToken, { model: "gpt-4o", messages: [{ role: "user", content: "Hi" }] }),
      404,
      "model_not_found",
    );
    expect(error).toMatchObject({ type: "invalid_request_error", param: "model" });
    expect(error.message).toContain("gpt-4o");
    expect(await conversationCount(ws.workspace.id)).toBe(0);
    expect(model.requests).toHaveLength(0);
  });

  it("refuses client-side tools with 400: the agent's tools run server-side", async () => {
    const ws = await signupWorkspace();
    const model = script({ text: REPLY });
    const tool = { type: "function", function: { name: "get_weather", parameters: { type: "object" } } };
    for (const [extra, param] of [
      [{ tools: [tool] }, "tools"],
      [{ functions: [tool.function] }, "functions"],
      [{ tool_choice: { type: "function", function: { name: "get_weather" } } }, "tool_choice"],
    ] as const) {
      const error = await expectOpenAiError(
        await complete(ws.adminToken, { model: "default", messages: [{ role: "user", content: "Hi" }], ...extra }),
        400,
        "unsupported_parameter",
      );
      expect(error).toMatchObject({ type: "invalid_request_error", param });
    }
    expect(await conversationCount(ws.workspace.id)).toBe(0);
    expect(model.requests).toHaveLength(0);
  });

  it("answers 400 invalid_request_error for a malformed body, a last message not the user's, or non-text content", async () => {
    const ws = await signupWorkspace();
    script({ text: REPLY });
    const missing = await expectOpenAiError(
      await complete(ws.adminToken, { model: "default" }),
      400,
      "validation_failed",
    );
    expect(missing).toMatchObject({ type: "invalid_request_error", param: "messages" });
    const bad = await call("POST", "/v1/chat/completions", {
      token: ws.adminToken,
      rawBody: "{not json",
      headers: { "Content-Type": "application/json" },
    });
    await expectOpenAiError(bad, 400, "malformed_request");
    await expectOpenAiError(
      await complete(ws.adminToken, {
        model: "default",
        messages: [
          { role: "user", content: "Hi" },
          { role: "assistant", content: "Hello" },
        ],
      }),
      400,
      "invalid_messages",
    );
    const image = await expectOpenAiError(
      await complete(ws.adminToken, {
        model: "default",
        messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "https://x.test/a.png" } }] }],
      }),
      400,
      "unsupported_content",
    );
    expect(image.param).toBe("messages.0.content.0");
    const textless = await expectOpenAiError(
      await complete(ws.adminToken, {
        model: "default",
        messages: [{ role: "user", content: [{ type: "text", text: "Hi" }, { type: "text" }] }],
      }),
      400,
      "unsupported_content",
    );
    expect(textless).toMatchObject({ param: "messages.0.content.1", message: expect.stringContaining("`text`") });
    expect(await conversationCount(ws.workspace.id)).toBe(0);
  });

  it("answers 402 insufficient_credits when the workspace is out of credits, before creating anything", async () => {
    const ws = await signupWorkspace();
    const model = script({ text: REPLY });
    await debit(env, ws.workspace.id, (await balance(env, ws.workspace.id)) + 500, "drain");
    const error = await expectOpenAiError(
      await complete(ws.adminToken, { model: "default", messages: [{ role: "user", content: "Hi" }] }),
      402,
      "insufficient_credits",
    );
    expect(error.type).toBe("insufficient_quota");
    expect(error.balance).toEqual(expect.any(Number));
    expect(await conversationCount(ws.workspace.id)).toBe(0);
    expect(model.requests).toHaveLength(0);
  });

  it("answers 401 invalid_api_key without a token or with an unknown one, keeping the Bearer challenge", async () => {
    for (const token of [undefined, `svc_pat_${"x".repeat(43)}`]) {
      const res = await complete(token, { model: "default", messages: [{ role: "user", content: "Hi" }] });
      const error = await expectOpenAiError(res, 401, "invalid_api_key");
      expect(error.type).toBe("invalid_request_error");
      expect(res.headers.get("WWW-Authenticate")).toMatch(/^Bearer /);
    }
  });

  it("answers 403 insufficient_scope without conversations:write", async () => {
    const ws = await signupWorkspace();
    const reader = await addUser(ws.adminToken, "member", ["agents:read", "conversations:read"]);
    await expectOpenAiError(
      await complete(reader.token, { model: "default", messages: [{ role: "user", content: "Hi" }] }),
      403,
      "insufficient_scope",
    );
  });

  it("shows the provider's refusal: 502 model_error with its message and status, or an error event in a stream", async () => {
    const ws = await signupWorkspace();
    script({ status: 400 });
    const error = await expectOpenAiError(
      await complete(ws.adminToken, { model: "default", messages: [{ role: "user", content: "Hi" }] }),
      502,
      "model_error",
    );
    expect(error).toMatchObject({ type: "server_error", provider_status: 400 });
    expect(error.message).toContain("scripted failure");

    const events = await sseData(
      await complete(ws.adminToken, { model: "default", stream: true, messages: [{ role: "user", content: "Hi" }] }),
    );
    const last = openAIErrorSchema().parse(events.at(-1));
    expect(last.error).toMatchObject({ code: "model_error", type: "server_error" });
    expect(last.error.message).toContain("scripted failure");
    expect(events).not.toContain("[DONE]");
  });

  it("answers 503 model_not_configured without a model, before creating anything", async () => {
    const ws = await signupWorkspace();
    await expectOpenAiError(
      await complete(ws.adminToken, { model: "default", messages: [{ role: "user", content: "Hi" }] }),
      503,
      "model_not_configured",
    );
    expect(await conversationCount(ws.workspace.id)).toBe(0);
  });
});

describe("the OpenAPI document", () => {
  it("documents both routes with their schemas, OpenAI's error shape and the stream's chunk", async () => {
    type Op = {
      security: unknown;
      requestBody?: { content: Record<string, { schema: { $ref?: string } }> };
      responses: Record<string, { content?: Record<string, { schema: { $ref?: string } }> }>;
    };
    const doc = (await (await call("GET", "/v1/openapi.json")).json()) as {
      paths: Record<string, Record<string, Op>>;
      components: { schemas: Record<string, unknown> };
    };
    const models = doc.paths["/v1/models"]!.get!;
    expect(models.security).toEqual([{ bearer: ["agents:read"] }]);
    expect(models.responses["200"]!.content!["application/json"]!.schema.$ref).toBe(
      "#/components/schemas/OpenAIModelList",
    );
    const completions = doc.paths["/v1/chat/completions"]!.post!;
    expect(completions.security).toEqual([{ bearer: ["conversations:write"] }]);
    expect(completions.requestBody!.content["application/json"]!.schema.$ref).toBe(
      "#/components/schemas/ChatCompletionRequest",
    );
    expect(completions.responses["200"]!.content!["application/json"]!.schema.$ref).toBe(
      "#/components/schemas/ChatCompletion",
    );
    expect(Object.keys(completions.responses["200"]!.content!)).toContain("text/event-stream");
    for (const status of ["400", "401", "402", "403", "404", "409", "413", "502", "503"])
      expect(completions.responses[status]!.content!["application/json"]!.schema.$ref, status).toBe(
        "#/components/schemas/OpenAIError",
      );
    expect(doc.components.schemas.ChatCompletionChunk).toBeDefined();
  });
});
