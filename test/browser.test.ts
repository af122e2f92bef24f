import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { CLOSE, METHODS } from "../durable-objects/protocol";
import { AskReplySchema } from "../src/browser/schemas";
import { MAX_ASK_STEPS } from "../src/browser/service";
import { agents } from "../src/db/schema";
import { db } from "../src/platform/db";
import { call, expectProblem, parse } from "./support/api";
import { auditEvents } from "./support/audit";
import { connectExtension, connectHeaders, type FakeExtension, sessionOf, TINY_PNG } from "./support/browser";
import { fakeLlm, toolMessages } from "./support/scripted-llm";
import { addUser, issueToken, signupWorkspace } from "./support/seed";

let llm: ReturnType<typeof fakeLlm> | null = null;
const script = (...turns: Parameters<typeof fakeLlm>) => (llm = fakeLlm(...turns));
afterEach(() => {
  llm?.restore();
  llm = null;
});

const ASK = "/v1/agent-browser/ask";
const ask = (token: string | undefined, body: unknown, headers?: Record<string, string>) =>
  call("POST", ASK, { token, body, headers });

/** Answers the next command the extension receives with `result` (or an error). */
async function serveOne(
  ext: FakeExtension,
  method: string,
  result: Record<string, unknown> | { error: string; message: string },
) {
  const frame = await ext.next();
  expect(frame.method).toBe(method);
  if ("error" in result && typeof result.error === "string")
    ext.fail(frame.id!, result.error, result.message as string);
  else ext.succeed(frame.id!, result);
  return frame;
}

describe("GET /v1/agent-browser/connect", () => {
  it("upgrades with a PAT in the subprotocol and echoes it", async () => {
    const ws = await signupWorkspace();
    const ext = await connectExtension(ws.adminToken);
    expect(await sessionOf(ws.user.id).isConnected()).toBe(true);
    ext.close();
  });

  it("picks the svc-pat subprotocol among several offered", async () => {
    const ws = await signupWorkspace();
    const res = await call("GET", "/v1/agent-browser/connect", {
      headers: { Upgrade: "websocket", "Sec-WebSocket-Protocol": `json, svc-pat.${ws.adminToken}` },
    });
    expect(res.status).toBe(101);
    expect(res.headers.get("Sec-WebSocket-Protocol")).toBe(`svc-pat.${ws.adminToken}`);
    res.webSocket!.accept();
    res.webSocket!.close();
  });

  it("checks the token before the upgrade: without one a plain request is 403 with a challenge, not 426", async () => {
    const attempts: Record<string, string>[] = [{}, { "Sec-WebSocket-Protocol": `svc-pat.svc_pat_${"C".repeat(43)}` }];
    for (const headers of attempts) {
      const res = await call("GET", "/v1/agent-browser/connect", { headers });
      await expectProblem(res, 403);
      expect(res.headers.get("WWW-Authenticate")).toMatch(/^Bearer realm="agent-browser",.*svc_pat_/);
    }
  });

  it("answers a request that is not a WebSocket upgrade with 426", async () => {
    const ws = await signupWorkspace();
    const res = await call("GET", "/v1/agent-browser/connect", {
      headers: { "Sec-WebSocket-Protocol": `svc-pat.${ws.adminToken}` },
    });
    await expectProblem(res, 426, "upgrade_required");
    expect(res.headers.get("Upgrade")).toBe("websocket");
  });

  it("refuses a missing, unknown, OAuth or revoked token with 403", async () => {
    const ws = await signupWorkspace();
    const connect = (headers: Record<string, string>) =>
      call("GET", "/v1/agent-browser/connect", { headers: { Upgrade: "websocket", ...headers } });
    await expectProblem(await connect({}), 403, "pat_required");
    await expectProblem(await connect({ "Sec-WebSocket-Protocol": "svc-pat." }), 403, "pat_required");
    await expectProblem(await connect({ "Sec-WebSocket-Protocol": "graphql-ws" }), 403, "pat_required");
    // the token belongs in the subprotocol, not in Authorization
    await expectProblem(await connect({ Authorization: `Bearer ${ws.adminToken}` }), 403, "pat_required");
    await expectProblem(await connect(connectHeaders(`svc_pat_${"A".repeat(43)}`)), 403, "invalid_token");
    // an OAuth access token (svc_at_…) is never accepted here
    await expectProblem(await connect(connectHeaders(`svc_at_${"A".repeat(43)}`)), 403);

    const member = await addUser(ws.adminToken, "member", ["agents:read"]);
    const tokens = await call("GET", "/v1/api/admin/tokens", { token: ws.adminToken });
    const { tokens: list } = (await tokens.json()) as { tokens: { id: string; user_id: string }[] };
    const memberToken = list.find((t) => t.user_id === member.user.id)!;
    expect((await call("DELETE", `/v1/api/admin/tokens/${memberToken.id}`, { token: ws.adminToken })).status).toBe(204);
    await expectProblem(await connect(connectHeaders(member.token)), 403, "invalid_token");
    expect(await sessionOf(member.user.id).isConnected()).toBe(false);
  });

  it("is documented in the OpenAPI document with its statuses", async () => {
    const doc = (await (await call("GET", "/v1/openapi.json")).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, unknown>; security: unknown }>>;
    };
    const connect = doc.paths["/v1/agent-browser/connect"]!.get!;
    expect(Object.keys(connect.responses).sort()).toEqual(["101", "403", "426"]);
    const askOp = doc.paths["/v1/agent-browser/ask"]!.post!;
    expect(Object.keys(askOp.responses)).toEqual(expect.arrayContaining(["200", "400", "403", "404", "502", "503"]));
    expect(askOp.security).toEqual([{ bearer: [] }]);
  });
});

describe("POST /v1/agent-browser/ask: refusals", () => {
  it("refuses a missing, unknown or OAuth token and a session-less call with 403", async () => {
    script({ text: "never" });
    await expectProblem(await ask(undefined, { prompt: "hi" }), 403, "pat_required");
    await expectProblem(await ask(`svc_pat_${"B".repeat(43)}`, { prompt: "hi" }), 403, "invalid_token");
    await expectProblem(await ask(`svc_at_${"B".repeat(43)}`, { prompt: "hi" }), 403);
    await expectProblem(await ask(undefined, { prompt: "hi" }, { Authorization: "Basic abc" }), 403, "pat_required");
    await expectProblem(
      await ask(undefined, { prompt: "hi" }, { Cookie: "svc_session=whatever" }),
      403,
      "pat_required",
    );
    expect(llm!.requests).toHaveLength(0);
  });

  it("names the PAT requirement in a WWW-Authenticate: Bearer challenge on every refusal of the credential", async () => {
    script({ text: "never" });
    const missing = await ask(undefined, { prompt: "hi" });
    await expectProblem(missing, 403, "pat_required");
    expect(missing.headers.get("WWW-Authenticate")).toBe(
      'Bearer realm="agent-browser", error_description="A personal access token (svc_pat_...) is required"',
    );
    const unknown = await ask(`svc_pat_${"B".repeat(43)}`, { prompt: "hi" });
    await expectProblem(unknown, 403, "invalid_token");
    expect(unknown.headers.get("WWW-Authenticate")).toMatch(/^Bearer realm="agent-browser", error="invalid_token", /);
    const session = await ask(undefined, { prompt: "hi" }, { Cookie: "svc_session=whatever" });
    await expectProblem(session, 403, "pat_required");
    expect(session.headers.get("WWW-Authenticate")).toMatch(/error="invalid_token".*svc_pat_/);
    // A valid PAT whose browser is not connected is no credential problem: no challenge.
    const ws = await signupWorkspace();
    const notConnected = await ask(ws.adminToken, { prompt: "hi" });
    await expectProblem(notConnected, 403, "browser_not_connected");
    expect(notConnected.headers.get("WWW-Authenticate")).toBeNull();
  });

  it("answers 403 when the user's browser is not connected, and audits the refusal", async () => {
    const ws = await signupWorkspace();
    script({ text: "never" });
    await expectProblem(await ask(ws.adminToken, { prompt: "What page am I on?" }), 403, "browser_not_connected");
    const [event] = await auditEvents(ws.workspace.id, "browser.ask");
    expect(event).toMatchObject({
      outcome: "denied",
      target: `user:${ws.user.id}`,
      details: { finish: "not_connected", steps: 0 },
    });
    expect(llm!.requests).toHaveLength(0);
  });

  it("validates the body: prompt required and bounded, known fields only, timeout and slug bounds", async () => {
    const ws = await signupWorkspace();
    const ext = await connectExtension(ws.adminToken);
    const bad = [
      {},
      { prompt: "" },
      { prompt: "   " },
      { prompt: 42 },
      { prompt: "x".repeat(20_001) },
      { prompt: "hi", timeout_ms: 10 },
      { prompt: "hi", timeout_ms: 600_000 },
      { prompt: "hi", timeout_ms: 1500.5 },
      { prompt: "hi", agent_slug: "Not A Slug" },
      { prompt: "hi", tools: ["shell"] },
    ];
    for (const body of bad) await expectProblem(await ask(ws.adminToken, body), 400, "validation_failed");
    await expectProblem(
      await call("POST", ASK, {
        token: ws.adminToken,
        rawBody: "{not json",
        headers: { "Content-Type": "application/json" },
      }),
      400,
    );
    expect(ext.backlog).toBe(0);
  });

  it("answers 404 for an unknown agent and 503 when no model is configured", async () => {
    const ws = await signupWorkspace();
    await connectExtension(ws.adminToken);
    script({ text: "never" });
    await expectProblem(await ask(ws.adminToken, { prompt: "hi", agent_slug: "nobody" }), 404);
    llm!.restore();
    llm = null;
    await expectProblem(await ask(ws.adminToken, { prompt: "hi" }), 503, "model_not_configured");
  });

  it("closes and refuses a connection whose token was revoked after it connected", async () => {
    const ws = await signupWorkspace();
    const member = await addUser(ws.adminToken, "member", ["agents:read"]);
    const ext = await connectExtension(member.token);
    const { tokens } = (await (await call("GET", "/v1/api/admin/tokens", { token: ws.adminToken })).json()) as {
      tokens: { id: string; user_id: string }[];
    };
    const socketToken = tokens.find((t) => t.user_id === member.user.id)!;
    const other = await issueToken(ws.adminToken, member.user.id, ["agents:read"], "second token");
    await call("DELETE", `/v1/api/admin/tokens/${socketToken.id}`, { token: ws.adminToken });

    script({ text: "never" });
    await expectProblem(await ask(other, { prompt: "hi" }), 403, "browser_not_connected");
    expect((await ext.closed).code).toBe(CLOSE.ended);
  });
});

describe("POST /v1/agent-browser/ask: isolation", () => {
  it("never reaches another user's socket", async () => {
    const ws = await signupWorkspace();
    const userB = await addUser(ws.adminToken, "member", ["agents:read"]);
    const extA = await connectExtension(ws.adminToken);
    script({ tool: "computer_url" }, { text: "done" });
    // B has no browser: A's socket is not borrowed
    await expectProblem(await ask(userB.token, { prompt: "Where am I?" }), 403, "browser_not_connected");
    await new Promise((r) => setTimeout(r, 50));
    expect(extA.backlog).toBe(0);

    // once B connects, B's ask drives B's socket only
    const extB = await connectExtension(userB.token);
    const pending = ask(userB.token, { prompt: "Where am I?" });
    await serveOne(extB, "computer.url", { url: "https://b.test/", title: "B" });
    const reply = await parse(await pending, AskReplySchema);
    expect(reply.reply).toBe("done");
    expect(extA.backlog).toBe(0);
    expect(await sessionOf(ws.user.id).isConnected()).toBe(true);
  });

  it("keeps workspaces apart: a user of another workspace never reaches this workspace's socket", async () => {
    const a = await signupWorkspace();
    const b = await signupWorkspace();
    const extA = await connectExtension(a.adminToken);
    script({ text: "nothing to do" });
    await expectProblem(
      await ask(b.adminToken, { prompt: "hi", agent_slug: "assistant" }),
      403,
      "browser_not_connected",
    );
    expect(extA.backlog).toBe(0);
  });
});

describe("POST /v1/agent-browser/ask: the turn, through the configured OpenAI-compatible model", () => {
  it("offers only the computer tools, sends the screenshot command, returns the result to the model and the reply to the caller", async () => {
    const ws = await signupWorkspace();
    const ext = await connectExtension(ws.adminToken);
    script({ tool: "computer_screenshot" }, (req) => ({
      text: toolMessages(req).length === 1 ? "I see a tiny blank page." : "I saw nothing.",
    }));

    const pending = ask(ws.adminToken, { prompt: "What is on my screen?" });
    const frame = await serveOne(ext, "computer.screenshot", { data: TINY_PNG });
    expect(frame).toEqual({ id: 1, method: "computer.screenshot", params: {} });

    const res = await pending;
    expect(res.status).toBe(200);
    expect(await parse(res, AskReplySchema)).toEqual({ reply: "I see a tiny blank page.", steps: 2 });

    const [first, second] = llm!.requests;
    const offered = (first!.tools ?? []).map((t) => t.function.name).sort();
    expect(offered).toEqual(METHODS.map((m) => m.replace(".", "_")).sort());
    expect(first!.model).toBe("fake-model");
    const system = first!.messages.find((m) => m.role === "system");
    expect(String(system?.content)).toContain("computer_* tools");
    expect(first!.messages.find((m) => m.role === "user")?.content).toBe("What is on my screen?");
    expect(JSON.stringify(toolMessages(second!))).toContain(TINY_PNG);

    const [event] = await auditEvents(ws.workspace.id, "browser.ask");
    expect(event).toMatchObject({
      outcome: "success",
      intent: "ask",
      actor_id: ws.user.id,
      details: {
        agent_slug: "assistant",
        steps: 2,
        tool_calls: 1,
        methods: ["computer.screenshot"],
        finish: "answered",
      },
    });
    expect(event!.agent_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.stringify(event)).not.toContain(TINY_PNG);
    expect(JSON.stringify(event)).not.toContain("What is on my screen?");
  });

  it("navigates, clicks, types, presses keys, scrolls and reads, one command per tool call, keeping typed text out of the audit", async () => {
    const ws = await signupWorkspace();
    const ext = await connectExtension(ws.adminToken);
    script(
      { tool: "computer_navigate", args: { url: "https://shop.test/search" } },
      { tool: "computer_click", args: { x: 120, y: 40 } },
      { tool: "computer_type", args: { text: "secret search words" } },
      { tool: "computer_key", args: { key: "Enter" } },
      { tool: "computer_scroll", args: { x: 10, y: 10, dx: 0, dy: 400 } },
      { tool: "computer_read" },
      (req) => ({
        text: JSON.stringify(toolMessages(req).at(-1)).includes("3 results") ? "There are 3 results." : "unknown",
      }),
    );
    const pending = ask(ws.adminToken, { prompt: "Search the shop" });
    expect((await serveOne(ext, "computer.navigate", {})).params).toEqual({ url: "https://shop.test/search" });
    expect((await serveOne(ext, "computer.click", {})).params).toEqual({ x: 120, y: 40 });
    expect((await serveOne(ext, "computer.type", {})).params).toEqual({ text: "secret search words" });
    expect((await serveOne(ext, "computer.key", {})).params).toEqual({ key: "Enter" });
    expect((await serveOne(ext, "computer.scroll", {})).params).toEqual({ x: 10, y: 10, dx: 0, dy: 400 });
    await serveOne(ext, "computer.read", { text: "Shop\n3 results" });
    expect(await parse(await pending, AskReplySchema)).toEqual({ reply: "There are 3 results.", steps: 7 });

    const [event] = await auditEvents(ws.workspace.id, "browser.ask");
    expect(event!.details.methods).toEqual([
      "computer.navigate",
      "computer.click",
      "computer.type",
      "computer.key",
      "computer.scroll",
      "computer.read",
    ]);
    expect(JSON.stringify(event)).not.toContain("secret search words");
    expect(JSON.stringify(event)).not.toContain("3 results");
  });

  it("runs the agent named by slug or alias with its own model and instructions, and refuses a disabled one", async () => {
    const ws = await signupWorkspace();
    await connectExtension(ws.adminToken);
    const now = new Date().toISOString();
    const agent = (slug: string, extra: Partial<typeof agents.$inferInsert>) => ({
      id: crypto.randomUUID(),
      workspaceId: ws.workspace.id,
      slug,
      displayName: slug,
      instructionsIsDefault: false,
      runtimeProfile: "standard",
      deliveryMode: "chat",
      status: "enabled" as const,
      isDefault: false,
      createdAt: now,
      updatedAt: now,
      ...extra,
    });
    await db(env)
      .insert(agents)
      .values([
        agent("shopper", {
          aliases: JSON.stringify(["buyer"]),
          model: "shopper-model",
          instructions: "Always compare prices.",
        }),
        agent("sleepy", { status: "disabled" }),
      ])
      .run();

    script({ text: "hello from the shopper" });
    const reply = await parse(
      await ask(ws.adminToken, { prompt: "hi", agent_slug: "buyer", timeout_ms: 5_000 }),
      AskReplySchema,
    );
    expect(reply).toEqual({ reply: "hello from the shopper", steps: 1 });
    expect(llm!.requests[0]!.model).toBe("shopper-model");
    expect(String(llm!.requests[0]!.messages[0]!.content)).toContain("Always compare prices.");
    const [event] = await auditEvents(ws.workspace.id, "browser.ask");
    expect(event!.details).toMatchObject({ agent_slug: "shopper" });

    await expectProblem(await ask(ws.adminToken, { prompt: "hi", agent_slug: "sleepy" }), 400, "agent_disabled");
    expect(llm!.requests).toHaveLength(1);
  });

  it("ends the turn with a clear reply when a browser command fails", async () => {
    const ws = await signupWorkspace();
    const ext = await connectExtension(ws.adminToken);
    script({ tool: "computer_click", args: { x: 5, y: 5 } }, { text: "should not be asked" });
    const pending = ask(ws.adminToken, { prompt: "Click the button" });
    await serveOne(ext, "computer.click", { error: "no such element", message: "nothing at 5,5" });
    const reply = await parse(await pending, AskReplySchema);
    expect(reply.reply).toContain("computer.click");
    expect(reply.reply).toContain("no such element");
    expect(reply.steps).toBe(1);
    expect(llm!.requests).toHaveLength(1);
    const [event] = await auditEvents(ws.workspace.id, "browser.ask");
    expect(event).toMatchObject({ outcome: "error", details: { finish: "tool_failed", steps: 1, tool_calls: 1 } });
  });

  it("ends the turn with a clear reply when the browser drops mid-command", async () => {
    const ws = await signupWorkspace();
    const ext = await connectExtension(ws.adminToken);
    script({ tool: "computer_read" }, { text: "should not be asked" });
    const started = Date.now();
    const pending = ask(ws.adminToken, { prompt: "Read the page" });
    await ext.next();
    ext.close(1001, "browser quit");
    const reply = await parse(await pending, AskReplySchema);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(reply.reply).toMatch(/disconnected/);
    const [event] = await auditEvents(ws.workspace.id, "browser.ask");
    expect(event!.details).toMatchObject({ finish: "disconnected" });
  });

  it("ends the turn at the deadline when the browser never answers", async () => {
    const ws = await signupWorkspace();
    const ext = await connectExtension(ws.adminToken);
    script({ tool: "computer_screenshot" }, { text: "should not be asked" });
    const started = Date.now();
    const res = await ask(ws.adminToken, { prompt: "Look", timeout_ms: 1_000 });
    const elapsed = Date.now() - started;
    const reply = await parse(res, AskReplySchema);
    expect(elapsed).toBeGreaterThanOrEqual(900);
    expect(elapsed).toBeLessThan(5_000);
    expect(reply.reply).toMatch(/time/);
    expect((await ext.next()).method).toBe("computer.screenshot");
    const [event] = await auditEvents(ws.workspace.id, "browser.ask");
    expect(event).toMatchObject({ outcome: "error", details: { timeout_ms: 1_000 } });
    expect(["deadline", "tool_failed"]).toContain(event!.details.finish);
  });

  it(`stops after ${MAX_ASK_STEPS} steps`, async () => {
    const ws = await signupWorkspace();
    const ext = await connectExtension(ws.adminToken);
    script({ tool: "computer_url" });
    const pending = ask(ws.adminToken, { prompt: "Loop forever" });
    for (let i = 0; i < MAX_ASK_STEPS; i++)
      await serveOne(ext, "computer.url", { url: "https://loop.test/", title: "Loop" });
    const reply = await parse(await pending, AskReplySchema);
    expect(reply.steps).toBe(MAX_ASK_STEPS);
    expect(reply.reply).toMatch(new RegExp(`stopped after ${MAX_ASK_STEPS} steps`));
    expect(llm!.requests).toHaveLength(MAX_ASK_STEPS);
    const [event] = await auditEvents(ws.workspace.id, "browser.ask");
    expect(event!.details).toMatchObject({ finish: "step_limit", steps: MAX_ASK_STEPS, tool_calls: MAX_ASK_STEPS });
  });

  it("answers 502 when the model endpoint fails", async () => {
    const ws = await signupWorkspace();
    const ext = await connectExtension(ws.adminToken);
    script({ status: 500 });
    const problem = await expectProblem(await ask(ws.adminToken, { prompt: "hi" }), 502, "model_error");
    expect(problem).toMatchObject({ detail: "scripted failure", provider_status: 500 });
    expect(ext.backlog).toBe(0);
  });

  it("never grants svc:computer to the caller's token", async () => {
    const ws = await signupWorkspace();
    await connectExtension(ws.adminToken);
    script({ text: "ok" });
    await parse(await ask(ws.adminToken, { prompt: "hi" }), AskReplySchema);
    const me = (await (await call("GET", "/v1/api/me", { token: ws.adminToken })).json()) as { scopes: string[] };
    expect(me.scopes).not.toContain("svc:computer");
  });
});
