/**
 * The service as an MCP server: the MCP SDK's own client against POST /v1/mcp with tokens
 * from the authorization code flow (oauth4webapi) and PATs; the transport's rules for a
 * stateless server; per-tool scopes; and the RFC 8707 binding between tokens and resources.
 */
import { env } from "cloudflare:workers";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import * as oauth from "oauth4webapi";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { call, expectProblem, ORIGIN } from "./support/api";
import { seedConversation, uploadFile } from "./support/artifacts";
import { auditEvents } from "./support/audit";
import { MCP_METADATA, MCP_RESOURCE, MCP_URL, mcpClient, oauthTokens, rpc, workerFetch } from "./support/mcp";
import {
  authorizePath,
  expectOAuthError,
  me,
  newPkce,
  oauthPost,
  REDIRECT,
  registerClient,
  sessionCookie,
  signIn,
} from "./support/oauth";
import { fakeLlm } from "./support/scripted-llm";
import { addUser, signupWorkspace } from "./support/seed";

type Ws = Awaited<ReturnType<typeof signupWorkspace>>;
const ALL = "agents:read conversations:read conversations:write";

let llm: ReturnType<typeof fakeLlm> | null = null;
afterEach(() => {
  llm?.restore();
  llm = null;
});

const text = (result: Awaited<ReturnType<Client["callTool"]>>) =>
  (result.content as { type: string; text: string }[]).map((c) => c.text).join("");

describe("the MCP SDK client with a token from the authorization code flow", () => {
  let ws: Ws;
  let client: Client;
  let accessToken: string;

  beforeAll(async () => {
    ws = await signupWorkspace();
    const tokens = await oauthTokens(ws.adminToken, ws.email, ALL, MCP_RESOURCE);
    accessToken = tokens.access_token;
    client = await mcpClient(accessToken);
  });

  it("initializes, lists the three tools, each with a description and an input schema", async () => {
    expect(client.getServerVersion()).toMatchObject({ name: "workspace-agent-service" });
    expect(client.getServerCapabilities()?.tools).toBeDefined();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(["ask_agent", "list_agents", "list_artifacts"]);
    for (const t of tools) {
      expect(t.description, t.name).toMatch(/\S{10}/);
      expect(t.inputSchema.type, t.name).toBe("object");
    }
    const ask = tools.find((t) => t.name === "ask_agent")!;
    expect(ask.inputSchema.required).toEqual(["prompt"]);
    expect(Object.keys(ask.inputSchema.properties ?? {}).sort()).toEqual(["agent_slug", "prompt"]);
  });

  it("list_agents answers the workspace's agents", async () => {
    const result = await client.callTool({ name: "list_agents", arguments: {} });
    expect(result.isError).toBeFalsy();
    const { agents } = JSON.parse(text(result)) as { agents: { slug: string; is_default: boolean }[] };
    expect(agents).toEqual([expect.objectContaining({ slug: "assistant", is_default: true, status: "enabled" })]);
    expect(result.structuredContent).toEqual({ agents });
  });

  it("list_artifacts answers the caller's artifacts, with download URLs", async () => {
    const conversation = await seedConversation(ws.workspace.id, ws.user.id);
    const upload = await uploadFile(ws.adminToken, conversation, { name: "report.txt", content: "numbers" });
    const { id } = (await upload.json()) as { id: string };
    const result = await client.callTool({ name: "list_artifacts", arguments: {} });
    const { artifacts } = JSON.parse(text(result)) as { artifacts: { id: string; download_url: string }[] };
    expect(artifacts).toEqual([
      expect.objectContaining({
        id,
        name: "report.txt",
        conversation_id: conversation,
        download_url: `${ORIGIN}/v1/api/artifacts/${id}/download`,
      }),
    ]);
  });

  it("ask_agent runs a fast turn with the default agent, answers its reply and debits credits", async () => {
    llm = fakeLlm({ text: "The tide turns at six." });
    const before = await balance(ws);
    const result = await client.callTool({ name: "ask_agent", arguments: { prompt: "When does the tide turn?" } });
    expect(result.isError).toBeFalsy();
    expect(text(result)).toBe("The tide turns at six.");
    const structured = result.structuredContent as { conversation_id: string; credits: number; agent_slug: string };
    expect(structured).toMatchObject({ reply: "The tide turns at six.", agent_slug: "assistant", credits: 1 });
    expect(llm.requests).toHaveLength(1);
    expect(llm.requests[0]!.messages.at(-1)).toMatchObject({ role: "user", content: "When does the tide turn?" });
    expect(await balance(ws)).toBe(before - 1);

    // The conversation is the caller's, in fast mode, and both steps are audited.
    const conversation = await call("GET", `/v1/api/conversations/${structured.conversation_id}`, {
      token: ws.adminToken,
    });
    expect(await conversation.json()).toMatchObject({ mode: "fast", created_by: ws.user.id });
    const [created] = (await auditEvents(ws.workspace.id, "conversation.create")).filter(
      (e) => e.conversation_id === structured.conversation_id,
    );
    expect(created).toMatchObject({ actor_kind: "oauth_client", actor_id: ws.user.id, details: { mode: "fast" } });
    const [turn] = (await auditEvents(ws.workspace.id, "conversation.turn")).filter(
      (e) => e.conversation_id === structured.conversation_id,
    );
    expect(turn).toMatchObject({ details: { runtime_profile: "fast", credits: 1 } });
  });

  it("ask_agent with agent_slug asks that agent; an unknown one is a tool error, not a protocol error", async () => {
    llm = fakeLlm({ text: "Helper here." });
    const res = await call("POST", "/v1/agents", {
      token: ws.adminToken,
      body: { slug: "helper", display_name: "Helper" },
    });
    expect(res.status).toBe(200);
    const ok = await client.callTool({ name: "ask_agent", arguments: { prompt: "Hi", agent_slug: "helper" } });
    expect(ok.structuredContent).toMatchObject({ agent_slug: "helper", reply: "Helper here." });
    const unknown = await client.callTool({ name: "ask_agent", arguments: { prompt: "Hi", agent_slug: "nobody" } });
    expect(unknown.isError).toBe(true);
    expect(text(unknown)).toMatch(/^not_found: /);
  });

  it("ask_agent without a model or without credits is a tool error, and creates nothing", async () => {
    const count = async () =>
      (await env.DB.prepare("SELECT COUNT(*) AS n FROM conversations WHERE workspace_id = ?")
        .bind(ws.workspace.id)
        .first<{ n: number }>())!.n;
    const before = await count();
    const noModel = await client.callTool({ name: "ask_agent", arguments: { prompt: "Hi" } });
    expect(noModel.isError).toBe(true);
    expect(text(noModel)).toMatch(/^quick_chat_not_configured: /);

    llm = fakeLlm({ text: "unused" });
    await env.DB.prepare(
      "INSERT INTO credit_ledger (id, workspace_id, amount, kind, reference, created_at) VALUES (?, ?, ?, 'adjustment', ?, ?)",
    )
      .bind(
        crypto.randomUUID(),
        ws.workspace.id,
        -(await balance(ws)),
        `drain-${crypto.randomUUID()}`,
        new Date().toISOString(),
      )
      .run();
    const broke = await client.callTool({ name: "ask_agent", arguments: { prompt: "Hi" } });
    expect(broke.isError).toBe(true);
    expect(text(broke)).toMatch(/^insufficient_credits: /);
    expect(llm.requests).toHaveLength(0);
    expect(await count()).toBe(before);
  });

  it("invalid tool arguments are refused without running the tool", async () => {
    const res = await client.callTool({ name: "ask_agent", arguments: { prompt: "" } });
    expect(res.isError).toBe(true);
    const unknown = await client.callTool({ name: "no_such_tool", arguments: {} });
    expect(unknown.isError).toBe(true);
  });
});

async function balance(ws: Ws): Promise<number> {
  const res = await call("GET", "/v1/api/billing/credits", { token: ws.adminToken });
  return ((await res.json()) as { balance: number }).balance;
}

describe("scopes are checked per tool", () => {
  it("a token with agents:read only lists agents, and ask_agent is refused with 403 insufficient_scope", async () => {
    const ws = await signupWorkspace();
    const { access_token } = await oauthTokens(ws.adminToken, ws.email, "agents:read", MCP_RESOURCE);
    const client = await mcpClient(access_token);
    const listed = await client.callTool({ name: "list_agents", arguments: {} });
    expect(listed.isError).toBeFalsy();

    llm = fakeLlm({ text: "must not run" });
    const refused = await client.callTool({ name: "ask_agent", arguments: { prompt: "Hi" } }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(StreamableHTTPError);
    expect((refused as StreamableHTTPError).code).toBe(403);
    expect(llm.requests).toHaveLength(0);
    const artifacts = await client.callTool({ name: "list_artifacts", arguments: {} }).catch((e: unknown) => e);
    expect((artifacts as StreamableHTTPError).code).toBe(403);

    // The refusal itself, as the MCP authorization spec shapes it.
    const res = await rpc(
      { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "ask_agent", arguments: { prompt: "Hi" } } },
      { token: access_token },
    );
    expect(res.status).toBe(403);
    expect(res.headers.get("WWW-Authenticate")).toBe(
      `Bearer error="insufficient_scope", scope="conversations:write", resource_metadata="${MCP_METADATA}", error_description="The tool ask_agent needs the scope conversations:write"`,
    );
    expect(await res.json()).toMatchObject({
      jsonrpc: "2.0",
      id: 7,
      error: { data: { scope: "conversations:write" } },
    });
    const conversations = await env.DB.prepare("SELECT COUNT(*) AS n FROM conversations WHERE workspace_id = ?")
      .bind(ws.workspace.id)
      .first<{ n: number }>();
    expect(conversations!.n).toBe(0);
  });

  it("a member's token can never reach more than the member's role; a PAT works like an OAuth token", async () => {
    const ws = await signupWorkspace();
    const member = await addUser(ws.adminToken, "member", ["agents:read"]);
    const client = await mcpClient(member.token);
    expect((await client.callTool({ name: "list_agents", arguments: {} })).isError).toBeFalsy();
    const refused = await client.callTool({ name: "list_artifacts", arguments: {} }).catch((e: unknown) => e);
    expect((refused as StreamableHTTPError).code).toBe(403);
  });
});

describe("the Streamable HTTP transport of a stateless server", () => {
  let ws: Ws;
  beforeAll(async () => {
    ws = await signupWorkspace();
  });

  it("initialize negotiates the protocol version and issues no session id", async () => {
    const init = (protocolVersion: string) =>
      rpc(
        {
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion, capabilities: {}, clientInfo: { name: "raw", version: "0" } },
        },
        { token: ws.adminToken, headers: { "MCP-Protocol-Version": protocolVersion } },
      );
    const known = await init("2025-06-18");
    expect(known.status).toBe(200);
    expect(known.headers.get("Content-Type")).toMatch(/^application\/json/);
    expect(known.headers.get("Mcp-Session-Id")).toBeNull();
    expect(await known.json()).toMatchObject({
      jsonrpc: "2.0",
      id: 1,
      result: {
        protocolVersion: "2025-06-18",
        serverInfo: { name: "workspace-agent-service" },
        capabilities: { tools: {} },
      },
    });
    // A version the server does not know: it answers with its own latest (the client decides whether to go on).
    const res = await rpc(
      {
        jsonrpc: "2.0",
        id: 2,
        method: "initialize",
        params: { protocolVersion: "1999-01-01", capabilities: {}, clientInfo: { name: "raw", version: "0" } },
      },
      { token: ws.adminToken },
    );
    expect(((await res.json()) as { result: { protocolVersion: string } }).result.protocolVersion).toBe(
      LATEST_PROTOCOL_VERSION,
    );
    // An unsupported version header on a later request is 400.
    const bad = await rpc(
      { jsonrpc: "2.0", id: 3, method: "ping" },
      { token: ws.adminToken, headers: { "MCP-Protocol-Version": "1999-01-01" } },
    );
    expect(bad.status).toBe(400);
  });

  it("ping answers {} without any initialize (each request stands alone)", async () => {
    const res = await rpc({ jsonrpc: "2.0", id: "p1", method: "ping" }, { token: ws.adminToken });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ jsonrpc: "2.0", id: "p1", result: {} });
  });

  it("a notification gets 202 and no body", async () => {
    const res = await rpc({ jsonrpc: "2.0", method: "notifications/initialized" }, { token: ws.adminToken });
    expect(res.status).toBe(202);
    expect(await res.text()).toBe("");
  });

  it("a foreign Origin is refused with 403 even with a valid token; the service's own origin is not", async () => {
    for (const origin of ["https://evil.example", "null", "http://svc.test", "https://svc.test.evil.example"]) {
      const res = await rpc(
        { jsonrpc: "2.0", id: 1, method: "ping" },
        { token: ws.adminToken, headers: { Origin: origin } },
      );
      await expectProblem(res, 403, "forbidden_origin");
    }
    const own = await rpc(
      { jsonrpc: "2.0", id: 1, method: "ping" },
      { token: ws.adminToken, headers: { Origin: ORIGIN } },
    );
    expect(own.status).toBe(200);
  });

  it("answers 401 with the challenge naming this resource's metadata, which names the MCP endpoint", async () => {
    const res = await rpc({ jsonrpc: "2.0", id: 1, method: "ping" });
    await expectProblem(res, 401, "unauthenticated");
    expect(res.headers.get("WWW-Authenticate")).toBe(`Bearer resource_metadata="${MCP_METADATA}", scope="${ALL}"`);
    const wrong = await rpc({ jsonrpc: "2.0", id: 1, method: "ping" }, { token: "svc_at_unknown" });
    await expectProblem(wrong, 401, "invalid_token");
    expect(wrong.headers.get("WWW-Authenticate")).toBe(
      `Bearer error="invalid_token", resource_metadata="${MCP_METADATA}", scope="${ALL}"`,
    );
    // RFC 9728 with oauth4webapi: the metadata is the MCP server's own.
    const rs = await oauth.processResourceDiscoveryResponse(
      new URL(MCP_URL),
      await oauth.resourceDiscoveryRequest(new URL(MCP_URL), { [oauth.customFetch]: workerFetch }),
    );
    expect(rs).toMatchObject({
      resource: MCP_RESOURCE,
      authorization_servers: [ORIGIN],
      scopes_supported: ALL.split(" "),
      bearer_methods_supported: ["header"],
    });
    expect(rs.scopes_supported).not.toContain("svc:computer");
  });

  it("a browser session alone is not a credential here", async () => {
    const session = await signIn(ws.email);
    const res = await rpc({ jsonrpc: "2.0", id: 1, method: "ping" }, { headers: sessionCookie(session) });
    await expectProblem(res, 401, "unauthenticated");
  });

  it("GET and DELETE are 405 (no server stream, no sessions)", async () => {
    for (const method of ["GET", "DELETE"]) {
      const res = await workerFetch(MCP_URL, { method, headers: { Authorization: `Bearer ${ws.adminToken}` } });
      await expectProblem(res, 405, "method_not_allowed");
      expect(res.headers.get("Allow")).toBe("POST");
    }
  });

  it("malformed messages are JSON-RPC errors, never 5xx", async () => {
    const headers = {
      Authorization: `Bearer ${ws.adminToken}`,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
    };
    const send = (body: string, extra: Record<string, string> = {}) =>
      workerFetch(MCP_URL, { method: "POST", headers: { ...headers, ...extra }, body });
    const broken = await send("{not json");
    expect(broken.status).toBe(400);
    expect(await broken.json()).toMatchObject({ jsonrpc: "2.0", error: { code: -32700 } });
    expect((await send('{"hello":1}')).status).toBe(400);
    expect((await send('{"jsonrpc":"2.0","id":1,"method":"ping"}', { Accept: "text/html" })).status).toBe(406);
    expect((await send('{"jsonrpc":"2.0","id":1,"method":"ping"}', { "Content-Type": "text/plain" })).status).toBe(415);
    const unknown = await send('{"jsonrpc":"2.0","id":1,"method":"resources/list"}');
    expect(await unknown.json()).toMatchObject({ id: 1, error: { code: -32601 } });
  });
});

describe("RFC 8707: tokens bound to a resource", () => {
  let ws: Ws;
  beforeAll(async () => {
    ws = await signupWorkspace();
  });

  const ping = (token: string) => rpc({ jsonrpc: "2.0", id: 1, method: "ping" }, { token });

  it("a token bound to the MCP server works there and is refused by the rest of the API", async () => {
    const { access_token } = await oauthTokens(ws.adminToken, ws.email, ALL, MCP_RESOURCE);
    expect((await ping(access_token)).status).toBe(200);
    const res = await me(access_token);
    await expectProblem(res, 401, "invalid_token");
    expect(res.headers.get("WWW-Authenticate")).toContain(
      `resource_metadata="${ORIGIN}/.well-known/oauth-protected-resource"`,
    );
  });

  it("a token bound to the API is refused by the MCP server; an unbound token works on both", async () => {
    const api = await oauthTokens(ws.adminToken, ws.email, ALL, ORIGIN);
    expect((await me(api.access_token)).status).toBe(200);
    const refused = await ping(api.access_token);
    await expectProblem(refused, 401, "invalid_token");
    expect(refused.headers.get("WWW-Authenticate")).toContain(`resource_metadata="${MCP_METADATA}"`);

    const unbound = await oauthTokens(ws.adminToken, ws.email, ALL);
    expect((await me(unbound.access_token)).status).toBe(200);
    expect((await ping(unbound.access_token)).status).toBe(200);
  });

  it("refresh keeps the resource; refreshing toward another resource is invalid_target", async () => {
    const first = await oauthTokens(ws.adminToken, ws.email, ALL, MCP_RESOURCE);
    const moved = await oauthPost("/v1/oauth/token", {
      grant_type: "refresh_token",
      refresh_token: first.refresh_token,
      client_id: first.client.client_id,
      resource: ORIGIN,
    });
    await expectOAuthError(moved, 400, "invalid_target");
    const refreshed = await oauthPost("/v1/oauth/token", {
      grant_type: "refresh_token",
      refresh_token: first.refresh_token!,
      client_id: first.client.client_id,
    });
    expect(refreshed.status).toBe(200);
    const { access_token } = (await refreshed.json()) as { access_token: string };
    expect((await ping(access_token)).status).toBe(200);
    await expectProblem(await me(access_token), 401, "invalid_token");
    const introspection = await oauthPost("/v1/oauth/introspect", {
      token: access_token,
      client_id: first.client.client_id,
    });
    expect(await introspection.json()).toMatchObject({ active: true, aud: MCP_RESOURCE });
  });

  it("an unknown resource is invalid_target at authorize (400, no redirect) and at the token endpoint", async () => {
    const client = await registerClient(ws.adminToken, { scope: ALL });
    const authorize = await call(
      "GET",
      authorizePath({
        client_id: client.client_id,
        redirect_uri: REDIRECT,
        response_type: "code",
        code_challenge: newPkce().challenge,
        resource: "https://elsewhere.example/mcp",
      }),
      { headers: sessionCookie(await signIn(ws.email)) },
    );
    expect(authorize.headers.get("Location")).toBeNull();
    await expectOAuthError(authorize, 400, "invalid_target");
    const res = await oauthPost("/v1/oauth/token", {
      grant_type: "refresh_token",
      refresh_token: "svc_rt_unknown",
      client_id: (await oauthTokens(ws.adminToken, ws.email, ALL)).client.client_id,
      resource: `${ORIGIN}/v1/agents`,
    });
    await expectOAuthError(res, 400, "invalid_target");
  });

  it("accepts the resource with an upper-case host or a trailing slash, bound in its canonical form", async () => {
    const { access_token } = await oauthTokens(ws.adminToken, ws.email, ALL, "HTTPS://SVC.TEST/v1/mcp/");
    expect((await ping(access_token)).status).toBe(200);
    await expectProblem(await me(access_token), 401, "invalid_token");
  });
});
