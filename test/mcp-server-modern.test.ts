/**
 * The service's MCP server for clients of MCP 2026-07-28 (stateless: no `initialize`, every
 * request carries its version and capabilities in `_meta`): raw requests for the rules of the
 * revision, and the v2 SDK's client negotiating either era against the same endpoint. The
 * 2025-era behaviour is test/mcp-server.test.ts's (the 1.x SDK client), unchanged.
 */
import { env } from "cloudflare:workers";
import { Client, type ProtocolError, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { call, expectProblem } from "./support/api";
import { auditEvents } from "./support/audit";
import {
  MCP_METADATA,
  MCP_RESOURCE,
  MCP_URL,
  MODERN,
  modernMeta,
  modernRpc,
  oauthTokens,
  sseMessages,
  workerFetch,
} from "./support/mcp";
import { registerClient } from "./support/oauth";
import { fakeLlm } from "./support/scripted-llm";
import { signupWorkspace } from "./support/seed";

type Ws = Awaited<ReturnType<typeof signupWorkspace>>;
// biome-ignore lint/suspicious/noExplicitAny: the tests read whatever the wire carries
type Wire = any;
type Rpc = {
  jsonrpc: string;
  id?: unknown;
  result?: Record<string, Wire>;
  error?: { code: number; message: string; data?: Wire };
};
const SERVER_INFO = { name: "workspace-agent-service", version: "1.0.0" };
const TOOLS = ["list_agents", "ask_agent", "list_artifacts"];

let llm: ReturnType<typeof fakeLlm> | null = null;
afterEach(() => {
  llm?.restore();
  llm = null;
});

/** The v2 SDK's client against /v1/mcp; `auto` negotiates the era with `server/discover`, `legacy` initializes. */
async function v2Client(token: string, mode: "auto" | "legacy" = "auto"): Promise<Client> {
  const client = new Client({ name: "v2-test-client", version: "1.0.0" }, { versionNegotiation: { mode } });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(MCP_URL), {
      requestInit: { headers: { Authorization: `Bearer ${token}` } },
      fetch: workerFetch,
    }),
  );
  return client;
}

async function balance(ws: Ws): Promise<number> {
  const res = await call("GET", "/v1/api/billing/credits", { token: ws.adminToken });
  return ((await res.json()) as { balance: number }).balance;
}

describe("2026-07-28 requests, as the revision shapes them", () => {
  let ws: Ws;
  beforeAll(async () => {
    ws = await signupWorkspace();
  });

  it("server/discover names the supported version, the capabilities and the server, with private caching hints", async () => {
    // server/discover.mdx: "Servers **MUST** implement it."
    const res = await modernRpc("server/discover", {}, { token: ws.adminToken, id: "d1" });
    expect(res.status).toBe(200);
    const { id, result } = (await res.json()) as Rpc;
    expect(id).toBe("d1");
    expect(result).toMatchObject({
      resultType: "complete",
      supportedVersions: [MODERN],
      capabilities: { tools: { listChanged: false } },
      cacheScope: "private",
      _meta: { "io.modelcontextprotocol/serverInfo": SERVER_INFO },
    });
    expect(result!.ttlMs).toBeGreaterThan(0);
    expect(result!.instructions).toMatch(/list_agents/);
  });

  it("tools/list: the three tools in a fixed order, complete, private, with the server in _meta", async () => {
    // changelog.mdx: "Servers **SHOULD** return tools from `tools/list` in a deterministic order"
    const lists = [];
    for (let i = 0; i < 2; i++) {
      const res = await modernRpc("tools/list", {}, { token: ws.adminToken });
      expect(res.status).toBe(200);
      lists.push(((await res.json()) as Rpc).result!);
    }
    const [first, second] = lists;
    expect(first!.tools.map((t: { name: string }) => t.name)).toEqual(TOOLS);
    expect(second!.tools).toEqual(first!.tools);
    // caching.mdx: "`"private"` is appropriate for [...] filtered list results that vary per user."
    expect(first).toMatchObject({
      resultType: "complete",
      cacheScope: "private",
      _meta: { "io.modelcontextprotocol/serverInfo": SERVER_INFO },
    });
    expect(first!.ttlMs).toBe(300_000);
  });

  it("tools/call answers a complete result with structured content; an unknown tool is -32602", async () => {
    const res = await modernRpc("tools/call", { name: "list_agents", arguments: {} }, { token: ws.adminToken, id: 5 });
    expect(res.status).toBe(200);
    const { id, result } = (await res.json()) as Rpc;
    expect(id).toBe(5);
    expect(result).toMatchObject({
      resultType: "complete",
      structuredContent: { agents: [expect.objectContaining({ slug: "assistant", is_default: true })] },
      _meta: { "io.modelcontextprotocol/serverInfo": SERVER_INFO },
    });
    expect(result!.isError).toBeFalsy();
    // tools.mdx (2026-07-28): protocol errors are for an "Unknown tool", as "`-32602`".
    const unknown = await modernRpc("tools/call", { name: "no_such_tool", arguments: {} }, { token: ws.adminToken });
    expect(((await unknown.json()) as Rpc).error).toMatchObject({ code: -32602 });
    const invalid = await modernRpc(
      "tools/call",
      { name: "ask_agent", arguments: { prompt: "" } },
      { token: ws.adminToken },
    );
    expect(((await invalid.json()) as Rpc).result).toMatchObject({ isError: true, resultType: "complete" });
  });

  it("an unsupported version is 400 -32022, listing the supported versions", async () => {
    // versioning.mdx: the server "**MUST** respond with an `UnsupportedProtocolVersionError` listing the versions it does support"
    const res = await modernRpc(
      "tools/list",
      {},
      {
        token: ws.adminToken,
        id: 9,
        meta: modernMeta("1900-01-01"),
        headers: { "MCP-Protocol-Version": "1900-01-01" },
      },
    );
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      id: 9,
      error: { code: -32022, data: { supported: [MODERN], requested: "1900-01-01" } },
    });
  });

  it("headers that do not match the body are 400 -32020, and nothing runs", async () => {
    // streamable-http.mdx: "Servers **MUST** reject requests with a `400 Bad Request` HTTP status and JSON-RPC error code `-32020`"
    llm = fakeLlm({ text: "must not run" });
    const cases: [string, Record<string, unknown>, Record<string, string>][] = [
      ["tools/list", {}, { "Mcp-Method": "tools/call" }],
      ["tools/call", { name: "ask_agent", arguments: { prompt: "Hi" } }, { "Mcp-Name": "list_agents" }],
      ["tools/call", { name: "list_agents", arguments: {} }, { "Mcp-Name": "" }],
      ["tools/list", {}, { "MCP-Protocol-Version": "2025-11-25" }],
    ];
    for (const [method, params, headers] of cases) {
      const res = await modernRpc(method, params, { token: ws.adminToken, id: 3, headers });
      expect(res.status, JSON.stringify(headers)).toBe(400);
      expect(((await res.json()) as Rpc).error, JSON.stringify(headers)).toMatchObject({ code: -32020 });
    }
    // A request without Mcp-Method at all.
    const bare = await workerFetch(MCP_URL, {
      method: "POST",
      headers: {
        Authorization: `Bearer ${ws.adminToken}`,
        "Content-Type": "application/json",
        Accept: "application/json, text/event-stream",
        "MCP-Protocol-Version": MODERN,
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 4, method: "tools/list", params: { _meta: modernMeta() } }),
    });
    expect(bare.status).toBe(400);
    expect(((await bare.json()) as Rpc).error).toMatchObject({ code: -32020 });
    expect(llm.requests).toHaveLength(0);
  });

  it("a request without its required _meta fields is 400 -32602", async () => {
    // index.mdx: "A request missing any required field is malformed; the server **MUST** reject it with JSON-RPC error code `-32602`"
    const meta = modernMeta() as Record<string, unknown>;
    delete meta["io.modelcontextprotocol/clientCapabilities"];
    const res = await modernRpc("tools/list", {}, { token: ws.adminToken, id: 6, meta });
    expect(res.status).toBe(400);
    expect(((await res.json()) as Rpc).error).toMatchObject({ code: -32602 });
  });

  it("initialize, ping and unknown methods are 404 -32601 in this revision", async () => {
    // streamable-http.mdx: "it **MUST** respond with `404 Not Found` and a JSON-RPC error with code `-32601`"
    for (const method of ["initialize", "ping", "logging/setLevel", "resources/list"]) {
      const res = await modernRpc(method, {}, { token: ws.adminToken, id: method });
      expect(res.status, method).toBe(404);
      expect(await res.json(), method).toMatchObject({ id: method, error: { code: -32601 } });
    }
  });

  it("subscriptions/listen: an SSE stream whose first message is the acknowledgement, tagged with the request id", async () => {
    // subscriptions.mdx: "The server **MUST** send `notifications/subscriptions/acknowledged` as the first message"
    const res = await modernRpc(
      "subscriptions/listen",
      { notifications: { toolsListChanged: true } },
      { token: ws.adminToken, id: 77 },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toMatch(/^text\/event-stream/);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes("\n\n")) text += (await reader.read()).value ?? "";
    await reader.cancel();
    const first = JSON.parse(
      text
        .split("\n")
        .find((l) => l.startsWith("data:"))!
        .slice(5),
    );
    // The tools never change while a deployment runs, so the server honours no list-change filter.
    expect(first).toMatchObject({
      method: "notifications/subscriptions/acknowledged",
      params: { _meta: { "io.modelcontextprotocol/subscriptionId": 77 }, notifications: {} },
    });
  });

  it("keeps what is ours in front: 401 with the challenge, the foreign-Origin 403, the per-tool scope gate", async () => {
    const anonymous = await modernRpc("server/discover");
    await expectProblem(anonymous, 401, "unauthenticated");
    expect(anonymous.headers.get("WWW-Authenticate")).toContain(`resource_metadata="${MCP_METADATA}"`);
    const foreign = await modernRpc(
      "tools/list",
      {},
      { token: ws.adminToken, headers: { Origin: "https://evil.example" } },
    );
    await expectProblem(foreign, 403, "forbidden_origin");

    const { access_token } = await oauthTokens(ws.adminToken, ws.email, "agents:read", MCP_RESOURCE);
    llm = fakeLlm({ text: "must not run" });
    const refused = await modernRpc(
      "tools/call",
      { name: "ask_agent", arguments: { prompt: "Hi" } },
      { token: access_token, id: 8 },
    );
    expect(refused.status).toBe(403);
    expect(refused.headers.get("WWW-Authenticate")).toContain(
      'error="insufficient_scope", scope="conversations:write"',
    );
    const { error } = (await refused.json()) as Rpc;
    // index.mdx: new codes "**SHOULD** be allocated outside the JSON-RPC reserved range (`-32768` to `-32000`)"
    expect(error!.code < -32768 || error!.code > -32000).toBe(true);
    expect(error).toMatchObject({ data: { error: "insufficient_scope", scope: "conversations:write" } });
    expect(llm.requests).toHaveLength(0);
    const listed = await modernRpc("tools/call", { name: "list_agents", arguments: {} }, { token: access_token });
    expect(listed.status).toBe(200);
  });

  it("ask_agent with a progress token streams progress naming the conversation, then the reply, paid once", async () => {
    llm = fakeLlm({ text: "The tide turns at six, as the almanac says." });
    const before = await balance(ws);
    const res = await modernRpc(
      "tools/call",
      { name: "ask_agent", arguments: { prompt: "When does the tide turn?" } },
      { token: ws.adminToken, id: 21, meta: { ...modernMeta(), progressToken: "p-21" } },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toMatch(/^text\/event-stream/);
    const messages = await sseMessages(res);
    const progress = messages.filter((m) => m.method === "notifications/progress") as {
      params: { progressToken: string; progress: number; message: string };
    }[];
    const final = messages.at(-1) as Rpc;
    expect(final).toMatchObject({ id: 21, result: { resultType: "complete" } });
    const conversationId = final.result!.structuredContent.conversation_id as string;
    expect(final.result!.content).toEqual([{ type: "text", text: "The tide turns at six, as the almanac says." }]);
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(progress[0]!.params).toMatchObject({ progressToken: "p-21", progress: 1 });
    expect(progress[0]!.params.message).toContain(conversationId);
    expect(progress.map((p) => p.params.progress)).toEqual(progress.map((_, i) => i + 1));
    expect(progress.some((p) => /writing its reply/.test(p.params.message))).toBe(true);

    // One turn, billed and audited once, although the reply was read back a second time.
    expect(llm.requests).toHaveLength(1);
    expect(await balance(ws)).toBe(before - 1);
    const turns = (await auditEvents(ws.workspace.id, "conversation.turn")).filter(
      (e) => e.conversation_id === conversationId,
    );
    expect(turns).toHaveLength(1);
    const conversation = await call("GET", `/v1/api/conversations/${conversationId}`, { token: ws.adminToken });
    const stored = (await conversation.json()) as { messages: { role: string }[] };
    expect(stored.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
  });
});

describe("the v2 SDK client against the same endpoint", () => {
  let ws: Ws;
  beforeAll(async () => {
    ws = await signupWorkspace();
  });

  it("negotiates 2026-07-28 with server/discover, then lists and calls tools", async () => {
    const client = await v2Client(ws.adminToken, "auto");
    expect(client.getProtocolEra()).toBe("modern");
    expect(client.getServerVersion()).toMatchObject(SERVER_INFO);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(TOOLS);
    const result = await client.callTool({ name: "list_agents", arguments: {} });
    expect(result.structuredContent).toMatchObject({ agents: [expect.objectContaining({ slug: "assistant" })] });
    const unknown = await client.callTool({ name: "no_such_tool", arguments: {} }).catch((e: ProtocolError) => e);
    expect((unknown as ProtocolError).code).toBe(-32602);
    await client.close();
  });

  it("reports ask_agent's progress through onprogress", async () => {
    llm = fakeLlm({ text: "Helper here, with an answer." });
    const client = await v2Client(ws.adminToken, "auto");
    const updates: { progress: number; message?: string }[] = [];
    const result = await client.callTool(
      { name: "ask_agent", arguments: { prompt: "Hi" } },
      { onprogress: (p) => updates.push(p), resetTimeoutOnProgress: true },
    );
    expect(result.content).toEqual([{ type: "text", text: "Helper here, with an answer." }]);
    const conversationId = (result.structuredContent as { conversation_id: string }).conversation_id;
    expect(updates[0]!.message).toContain(conversationId);
    const [row] = (
      await env.DB.prepare("SELECT mode FROM conversations WHERE id = ?").bind(conversationId).all<{
        mode: string;
      }>()
    ).results;
    expect(row).toEqual({ mode: "fast" });
    await client.close();
  });

  it("speaks 2025-11-25 when asked to (the initialize handshake), from the same tools", async () => {
    const client = await v2Client(ws.adminToken, "legacy");
    expect(client.getProtocolEra()).toBe("legacy");
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(TOOLS);
    expect((await client.callTool({ name: "list_artifacts", arguments: {} })).structuredContent).toEqual({
      artifacts: [],
    });
    await client.close();
  });

  it("a 2025-era client's ask_agent with a progress token gets its progress over SSE", async () => {
    llm = fakeLlm({ text: "Progress for the old era too." });
    const client = await v2Client(ws.adminToken, "legacy");
    const updates: { progress: number; message?: string }[] = [];
    const result = await client.callTool(
      { name: "ask_agent", arguments: { prompt: "Hi" } },
      { onprogress: (p) => updates.push(p) },
    );
    expect(result.content).toEqual([{ type: "text", text: "Progress for the old era too." }]);
    expect(updates.length).toBeGreaterThanOrEqual(1);
    expect(updates[0]!.message).toContain((result.structuredContent as { conversation_id: string }).conversation_id);
    await client.close();
  });
});

describe("OAuth for clients of either revision", () => {
  it("registration (RFC 7591) works as before, with or without the application_type 2026-07-28 clients send", async () => {
    // changelog.mdx: Dynamic Client Registration "remains available for backwards compatibility"
    const ws = await signupWorkspace();
    const old = await registerClient(ws.adminToken, { redirect_uris: ["http://127.0.0.1:33418/callback"] });
    const modern = await registerClient(ws.adminToken, {
      redirect_uris: ["http://127.0.0.1:33419/callback"],
      application_type: "native",
    });
    for (const client of [old, modern]) expect(client.client_id).toMatch(/\S/);
    const events = await auditEvents(ws.workspace.id, "oauth.client.register");
    expect(events.map((e) => e.target).sort()).toEqual(
      [`oauth_client:${old.client_id}`, `oauth_client:${modern.client_id}`].sort(),
    );
  });

  it("offline_access is advertised nowhere: not in the challenges, nor in either metadata's scopes_supported", async () => {
    // authorization/index.mdx: servers "**SHOULD NOT** include `offline_access` in `WWW-Authenticate` scope or Protected Resource Metadata `scopes_supported`"
    const challenge = (await modernRpc("server/discover")).headers.get("WWW-Authenticate")!;
    expect(challenge).toMatch(/scope="[^"]+"/);
    expect(challenge).not.toContain("offline_access");
    for (const path of [
      "/.well-known/oauth-protected-resource/v1/mcp",
      "/.well-known/oauth-protected-resource",
      "/.well-known/oauth-authorization-server",
    ]) {
      const metadata = (await (await call("GET", path)).json()) as { scopes_supported: string[] };
      expect(metadata.scopes_supported.length, path).toBeGreaterThan(0);
      expect(metadata.scopes_supported, path).not.toContain("offline_access");
    }
    // RFC 9207, which 2026-07-28 clients validate: the issuer says it sends `iss`.
    const as = (await (await call("GET", "/.well-known/oauth-authorization-server")).json()) as Record<string, unknown>;
    expect(as).toMatchObject({ authorization_response_iss_parameter_supported: true });
  });
});
