/**
 * The MCP client of agents' turns (src/mcp/client.ts) against servers built on the v2 SDK, one
 * of each era: a 2026-07-28 server (`createMcpHandler`, which also serves 2025 clients) and a
 * 2025-only one (`legacyStatelessFallback`). Both are services outside ours, reached through a
 * `fetch` wrapper that records what they were sent.
 */
import {
  type CacheHint,
  createMcpHandler,
  inputRequired,
  legacyStatelessFallback,
  McpServer,
} from "@modelcontextprotocol/server";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ConversationSchema, TurnResponseSchema } from "../src/conversations/schemas";
import { call, parse } from "./support/api";
import { fakeLlm, toolMessages } from "./support/scripted-llm";
import { signupWorkspace } from "./support/seed";

type Seen = {
  method: string;
  envelope: boolean;
  headers: { method: string | null; name: string | null; region: string | null; authorization: string | null };
};

/** A v2 SDK server at https://<host>/mcp: `modern` serves 2026-07-28 (and 2025), `legacy` 2025 only. */
function v2Host(host: string, era: "modern" | "legacy", cache?: CacheHint) {
  const seen: Seen[] = [];
  const calls: { order: string; region?: string }[] = [];
  const factory = () => {
    const server = new McpServer(
      { name: `${host}-crm`, version: "2.0.0" },
      { capabilities: { tools: {} }, cacheHints: cache ? { "tools/list": cache } : undefined },
    );
    server.registerTool(
      "lookup_order",
      {
        description: "Looks an order up by number, in its region",
        inputSchema: z.object({
          order: z.string(),
          // SEP-2243: the region travels in an `Mcp-Param-Region` header too.
          region: z.string().optional().meta({ "x-mcp-header": "Region" }),
        }),
      },
      async ({ order, region }) => {
        calls.push({ order, region });
        return { content: [{ type: "text", text: `Order ${order} ships on Friday` }] };
      },
    );
    server.registerTool("refund_order", { description: "Refunds an order once someone confirms" }, async () =>
      inputRequired({ requestState: "awaiting-confirmation" }),
    );
    return server;
  };
  const serve = era === "modern" ? createMcpHandler(factory).fetch : legacyStatelessFallback(factory);
  const original = globalThis.fetch;
  globalThis.fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    if (new URL(req.url).hostname !== host) return original(input, init);
    const body =
      req.method === "POST" ? ((await req.clone().json()) as { method?: string; params?: { _meta?: object } }) : {};
    seen.push({
      method: body.method ?? req.method,
      envelope: Object.keys(body.params?._meta ?? {}).some((k) => k.startsWith("io.modelcontextprotocol/")),
      headers: {
        method: req.headers.get("mcp-method"),
        name: req.headers.get("mcp-name"),
        region: req.headers.get("mcp-param-region"),
        authorization: req.headers.get("authorization"),
      },
    });
    return serve(req);
  };
  const restore = () => {
    globalThis.fetch = original;
  };
  return { seen, calls, restore };
}

let restorers: (() => void)[] = [];
beforeEach(() => {
  restorers = [];
});
afterEach(() => {
  for (const r of restorers.reverse()) r();
});

/** A workspace with the server as its custom integration `t:<slug>`, and a conversation. */
async function setup(slug: string, host: string) {
  const ws = await signupWorkspace();
  const res = await call("POST", "/v1/mcp/custom", {
    token: ws.adminToken,
    body: {
      slug,
      name: slug.toUpperCase(),
      url: `https://${host}/mcp`,
      headers: { Authorization: `Bearer ${slug}-secret` },
    },
  });
  expect(res.status).toBe(201);
  const conversation = await parse(
    await call("POST", "/v1/api/conversations", { token: ws.adminToken, body: {} }),
    ConversationSchema,
  );
  const turn = async (content: string) =>
    parse(
      await call("POST", `/v1/api/conversations/${conversation.id}/messages`, {
        token: ws.adminToken,
        body: { content },
      }),
      TurnResponseSchema,
    );
  return { ws, turn };
}

describe("an MCP 2026-07-28 server", () => {
  it("is found with server/discover and called statelessly, with the standard and x-mcp-header headers", async () => {
    const host = v2Host("modern.mcp.test", "modern");
    restorers.push(host.restore);
    const { turn } = await setup("crm", "modern.mcp.test");
    const llm = fakeLlm(
      { tool: "mcp__t_crm__lookup_order", args: { order: "1042", region: "us-west1" } },
      { text: "Order 1042 ships on Friday." },
    );
    restorers.push(llm.restore);
    const answered = await turn("When does order 1042 ship?");
    expect(answered.reply.content).toBe("Order 1042 ships on Friday.");
    expect(answered.reply.tool_calls).toEqual([{ name: "mcp__t_crm__lookup_order", ok: true }]);
    expect(host.calls).toEqual([{ order: "1042", region: "us-west1" }]);
    expect(JSON.stringify(toolMessages(llm.requests[1]!))).toContain("Order 1042 ships on Friday");

    // versioning.mdx: a client "**MAY** call it before sending any other requests"; no initialize is sent.
    expect(host.seen.map((s) => s.method)).toEqual(["server/discover", "tools/list", "tools/call"]);
    expect(host.seen.every((s) => s.envelope && s.headers.method === s.method)).toBe(true);
    expect(host.seen.every((s) => s.headers.authorization === "Bearer crm-secret")).toBe(true);
    // streamable-http.mdx: "conforming clients **MUST** mirror the designated parameter values into HTTP headers"
    expect(host.seen.at(-1)!.headers).toMatchObject({ name: "lookup_order", region: "us-west1" });
  });

  it("within the list's freshness, a later turn calls the tool at once: era and tools are remembered", async () => {
    const host = v2Host("cached.mcp.test", "modern", { ttlMs: 300_000, cacheScope: "private" });
    restorers.push(host.restore);
    const { turn } = await setup("crm", "cached.mcp.test");
    const llm = fakeLlm(
      { tool: "mcp__t_crm__lookup_order", args: { order: "1" } },
      { text: "First." },
      { tool: "mcp__t_crm__lookup_order", args: { order: "2" } },
      { text: "Second." },
    );
    restorers.push(llm.restore);
    await turn("One?");
    const first = host.seen.length;
    await turn("Two?");
    expect(host.seen.slice(first).map((s) => s.method)).toEqual(["tools/call"]);
    expect(host.calls.map((c) => c.order)).toEqual(["1", "2"]);
  });

  it("a list the server says is stale at once (ttlMs 0) is asked again on the next turn", async () => {
    const host = v2Host("fresh.mcp.test", "modern", { ttlMs: 0, cacheScope: "private" });
    restorers.push(host.restore);
    const { turn } = await setup("crm", "fresh.mcp.test");
    const llm = fakeLlm({ text: "One." }, { text: "Two." });
    restorers.push(llm.restore);
    await turn("One?");
    await turn("Two?");
    expect(host.seen.map((s) => s.method)).toEqual(["server/discover", "tools/list", "server/discover", "tools/list"]);
  });

  it("a call the server answers with input_required fails with a message the agent can act on", async () => {
    const host = v2Host("ask.mcp.test", "modern");
    restorers.push(host.restore);
    const { turn } = await setup("crm", "ask.mcp.test");
    const llm = fakeLlm({ tool: "mcp__t_crm__refund_order", args: {} }, { text: "I could not refund it." });
    restorers.push(llm.restore);
    const answered = await turn("Refund order 7.");
    expect(answered.reply.tool_calls).toEqual([{ name: "mcp__t_crm__refund_order", ok: false }]);
    const told = JSON.stringify(toolMessages(llm.requests[1]!));
    expect(told).toContain("asked for more input during the call");
    expect(told).toContain("no one can answer it during an agent's turn");
    // Asked once: the client does not retry with answers it does not have.
    expect(host.seen.filter((s) => s.method === "tools/call")).toHaveLength(1);
  });
});

describe("a 2025-era server", () => {
  it("gets the initialize handshake after the probe, and its results without resultType count as complete", async () => {
    const host = v2Host("legacy.mcp.test", "legacy");
    restorers.push(host.restore);
    const { turn } = await setup("crm", "legacy.mcp.test");
    const llm = fakeLlm(
      { tool: "mcp__t_crm__lookup_order", args: { order: "77", region: "eu" } },
      { text: "Order 77 ships on Friday." },
    );
    restorers.push(llm.restore);
    const answered = await turn("And order 77?");
    expect(answered.reply.tool_calls).toEqual([{ name: "mcp__t_crm__lookup_order", ok: true }]);
    expect(host.calls).toEqual([{ order: "77", region: "eu" }]);
    const methods = host.seen.map((s) => s.method);
    // versioning.mdx: anything but a recognized modern error "identifies a legacy server"
    expect(methods[0]).toBe("server/discover");
    expect(methods.slice(1)).toEqual(expect.arrayContaining(["initialize", "tools/list", "tools/call"]));
    expect(host.seen.filter((s) => s.method !== "server/discover").every((s) => !s.envelope)).toBe(true);
  });
});
