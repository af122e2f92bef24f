import { env } from "cloudflare:workers";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { McpServerCatalogueSchema } from "../src/agents/schemas";
import { ConversationSchema, TurnResponseSchema } from "../src/conversations/schemas";
import { mcpToolName } from "../src/mcp/client";
import { CustomListSchema, CustomSchema } from "../src/mcp/schemas";
import { createAgent, getAgent } from "./support/agents";
import { call, expectProblem, parse } from "./support/api";
import { auditEvents } from "./support/audit";
import { fakeLlm, toolMessages } from "./support/scripted-llm";
import { addUser, signupWorkspace } from "./support/seed";

/**
 * A real MCP server (the SDK's, over Streamable HTTP, stateless) at https://crm.mcp.test/mcp,
 * reached through a `fetch` spy: it is a service outside ours. It records what it was sent.
 */
type Seen = { method: string; authorization: string | null };
function mcpHost(host: string, opts: { fail?: boolean; extraTools?: number; hugeResult?: number } = {}) {
  const seen: Seen[] = [];
  const calls: { order: string }[] = [];
  // A plain wrapper, not a spy: the model fake spies on `fetch` too, and passes other hosts on to this.
  const original = globalThis.fetch;
  globalThis.fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    if (new URL(req.url).hostname !== host) return original(input, init);
    if (opts.fail) return new Response("upstream down", { status: 502 });
    const body = req.method === "POST" ? ((await req.clone().json()) as { method?: string }) : {};
    seen.push({ method: body.method ?? req.method, authorization: req.headers.get("authorization") });
    const server = new McpServer({ name: "crm", version: "1.0.0" });
    server.registerTool(
      "lookup_order",
      { description: "Looks an order up by number", inputSchema: { order: z.string() } },
      async ({ order }) => {
        calls.push({ order });
        return { content: [{ type: "text", text: `Order ${order} ships on Friday` }] };
      },
    );
    for (let i = 0; i < (opts.extraTools ?? 0); i++)
      server.registerTool(`report_number_${i}_of_the_quarterly_revenue_by_region_and_product`, {}, async () => ({
        content: [{ type: "text", text: "x".repeat(opts.hugeResult ?? 10) }],
      }));
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await server.connect(transport);
    return transport.handleRequest(req);
  };
  return {
    seen,
    calls,
    restore: () => {
      globalThis.fetch = original;
    },
  };
}

let restorers: (() => void)[] = [];
beforeEach(() => {
  restorers = [];
});
afterEach(() => {
  for (const r of restorers.reverse()) r();
});

async function addCustom(token: string, body: Record<string, unknown>) {
  return call("POST", "/v1/mcp/custom", { token, body });
}

describe("custom MCP integrations", () => {
  it("adds one (headers sealed, never returned), lists it, offers it in the catalogue, deletes it with every enablement", async () => {
    const ws = await signupWorkspace();
    const member = await addUser(ws.adminToken, "member", ["agents:read"]);
    expect((await call("GET", "/v1/mcp/custom")).status).toBe(401);
    await expectProblem(
      await addCustom(member.token, { slug: "crm", name: "CRM", url: "https://crm.mcp.test/mcp" }),
      403,
    );

    const res = await addCustom(ws.adminToken, {
      slug: "crm",
      name: "CRM",
      url: "https://crm.mcp.test/mcp",
      headers: { Authorization: "Bearer crm-secret-123" },
    });
    expect(res.status).toBe(201);
    const created = await parse(res, CustomSchema);
    expect(created).toMatchObject({ slug: "t:crm", header_names: ["Authorization"], description: "" });
    expect(JSON.stringify(created)).not.toContain("crm-secret-123");
    const stored = await env.DB.prepare("SELECT headers_sealed FROM mcp_custom_integrations WHERE workspace_id = ?1")
      .bind(ws.workspace.id)
      .first<{ headers_sealed: string }>();
    expect(stored!.headers_sealed).not.toContain("crm-secret-123");

    await expectProblem(await addCustom(ws.adminToken, { slug: "crm", name: "Again", url: "https://x.test/mcp" }), 409);
    await expectProblem(await addCustom(ws.adminToken, { slug: "plain", name: "P", url: "http://x.test/mcp" }), 400);
    await expectProblem(
      await addCustom(ws.adminToken, { slug: "hdr", name: "H", url: "https://x.test/mcp", headers: { Host: "evil" } }),
      400,
    );

    const list = await parse(await call("GET", "/v1/mcp/custom", { token: ws.adminToken }), CustomListSchema);
    expect(list.integrations.map((i) => i.slug)).toEqual(["t:crm"]);
    const catalogue = await parse(
      await call("GET", "/v1/api/mcp/servers", { token: ws.adminToken }),
      McpServerCatalogueSchema,
    );
    expect(catalogue.mcp_servers.find((s) => s.slug === "t:crm")).toMatchObject({ custom: true, installed: true });

    const agent = (await (await call("GET", "/v1/agents", { token: ws.adminToken })).json()) as {
      agents: { id: string }[];
    };
    const id = agent.agents[0]!.id;
    expect(
      (await call("PUT", `/v1/agents/${id}/mcp`, { token: ws.adminToken, body: { mcp_servers: ["t:crm"] } })).status,
    ).toBe(200);

    const platform = catalogue.mcp_servers.find((s) => !s.custom)!;
    await expectProblem(
      await call("DELETE", `/v1/mcp/custom/${platform.slug}`, { token: ws.adminToken }),
      400,
      "not_custom",
    );
    await expectProblem(await call("DELETE", "/v1/mcp/custom/t:nosuch", { token: ws.adminToken }), 404);
    const other = await signupWorkspace();
    await expectProblem(await call("DELETE", "/v1/mcp/custom/t:crm", { token: other.adminToken }), 404);
    expect((await call("DELETE", "/v1/mcp/custom/t:crm", { token: ws.adminToken })).status).toBe(204);
    expect((await (await call("GET", `/v1/agents/${id}/mcp`, { token: ws.adminToken })).json()) as unknown).toEqual({
      mcp_servers: [],
    });
    const left = await env.DB.prepare(
      `SELECT (SELECT count(*) FROM mcp_custom_integrations WHERE workspace_id = ?1) AS rows,
              (SELECT count(*) FROM workspace_mcp_servers WHERE workspace_id = ?1 AND slug = 't:crm') AS installs`,
    )
      .bind(ws.workspace.id)
      .first();
    expect(left).toEqual({ rows: 0, installs: 0 });

    const [made] = await auditEvents(ws.workspace.id, "mcp.custom.create");
    expect(made).toMatchObject({ target: "mcp_server:t:crm", details: { authenticated: true } });
    expect(JSON.stringify(await auditEvents(ws.workspace.id))).not.toContain("crm-secret-123");
    expect(await auditEvents(ws.workspace.id, "mcp.custom.delete")).toHaveLength(1);
    // The default agent cannot be disabled: losing its only server widens it, on the record.
    const [widened] = await auditEvents(ws.workspace.id, "agent.subset_widened");
    expect(widened).toMatchObject({
      target: `agent:${id}`,
      agent_id: id,
      details: { reason: "only_mcp_server_removed", mcp_server: "t:crm" },
    });
  });

  // "An empty list means that the agent uses all skills, or all MCP servers, installed for the workspace":
  // deleting an agent's only server must not widen it to every server silently.
  it("disables a non-default agent whose only enabled server it deletes; one that had others just loses it", async () => {
    const ws = await signupWorkspace();
    for (const slug of ["crm", "erp"])
      expect((await addCustom(ws.adminToken, { slug, name: slug, url: `https://${slug}.mcp.test/mcp` })).status).toBe(
        201,
      );
    const only = await createAgent(ws.adminToken, { slug: "crm-only", display_name: "CRM", mcp_servers: ["t:crm"] });
    const both = await createAgent(ws.adminToken, {
      slug: "crm-erp",
      display_name: "Both",
      mcp_servers: ["t:crm", "t:erp"],
    });
    expect((await call("DELETE", "/v1/mcp/custom/crm", { token: ws.adminToken })).status).toBe(204);

    const mcpOf = async (agentId: string) =>
      (await (await call("GET", `/v1/agents/${agentId}/mcp`, { token: ws.adminToken })).json()) as unknown;
    expect(await getAgent(ws.adminToken, only.id)).toMatchObject({ status: "disabled" });
    expect(await mcpOf(only.id)).toEqual({ mcp_servers: [] });
    expect(await getAgent(ws.adminToken, both.id)).toMatchObject({ status: "enabled" });
    expect(await mcpOf(both.id)).toEqual({ mcp_servers: ["t:erp"] });
    // A disabled agent answers nowhere, as after DELETE /v1/agents/{id}.
    await expectProblem(
      await call("POST", "/v1/api/conversations", { token: ws.adminToken, body: { agent_slug: "crm-only" } }),
      400,
      "agent_disabled",
    );

    const disabled = await auditEvents(ws.workspace.id, "agent.disable");
    expect(disabled.map((e) => [e.target, e.agent_id, e.actor_id, e.details])).toEqual([
      [
        `agent:${only.id}`,
        only.id,
        ws.user.id,
        { slug: "crm-only", changed: true, reason: "only_mcp_server_removed", mcp_server: "t:crm" },
      ],
    ]);
    expect(await auditEvents(ws.workspace.id, "agent.subset_widened")).toEqual([]);
  });
});

describe("MCP servers in an agent's turn", () => {
  async function setup(servers: { slug: string; host: string }[]) {
    const ws = await signupWorkspace();
    for (const s of servers)
      expect(
        (
          await addCustom(ws.adminToken, {
            slug: s.slug,
            name: s.slug.toUpperCase(),
            url: `https://${s.host}/mcp`,
            headers: { Authorization: `Bearer ${s.slug}-secret` },
          })
        ).status,
      ).toBe(201);
    const conversation = await parse(
      await call("POST", "/v1/api/conversations", { token: ws.adminToken, body: {} }),
      ConversationSchema,
    );
    return { ws, conversation };
  }

  it("offers the server's tools as mcp__<server>__<tool> and calls them with the stored credentials", async () => {
    const host = mcpHost("crm.mcp.test");
    restorers.push(host.restore);
    const { ws, conversation } = await setup([{ slug: "crm", host: "crm.mcp.test" }]);
    const name = mcpToolName("t:crm", "lookup_order");
    expect(name).toBe("mcp__t_crm__lookup_order");
    const llm = fakeLlm({ tool: name, args: { order: "1042" } }, { text: "Order 1042 ships on Friday." });
    restorers.push(llm.restore);
    const res = await call("POST", `/v1/api/conversations/${conversation.id}/messages`, {
      token: ws.adminToken,
      body: { content: "When does order 1042 ship?" },
    });
    const turn = await parse(res, TurnResponseSchema);
    expect(turn.reply.content).toBe("Order 1042 ships on Friday.");
    expect(turn.reply.tool_calls).toEqual([{ name, ok: true }]);
    expect(host.calls).toEqual([{ order: "1042" }]);
    expect(host.seen.every((s) => s.authorization === "Bearer crm-secret")).toBe(true);
    expect(host.seen.map((s) => s.method)).toEqual(expect.arrayContaining(["initialize", "tools/list", "tools/call"]));
    expect(llm.requests[0]!.tools?.map((t) => t.function.name)).toContain(name);
    expect(JSON.stringify(toolMessages(llm.requests[1]!))).toContain("Order 1042 ships on Friday");
  });

  it("drops a failing server from the turn with a note, and the turn still answers", async () => {
    const good = mcpHost("crm.mcp.test");
    const bad = mcpHost("down.mcp.test", { fail: true });
    restorers.push(good.restore, bad.restore);
    const { ws, conversation } = await setup([
      { slug: "crm", host: "crm.mcp.test" },
      { slug: "down", host: "down.mcp.test" },
    ]);
    const llm = fakeLlm({ text: "I could not reach one of the systems, but here is what I know." });
    restorers.push(llm.restore);
    const res = await call("POST", `/v1/api/conversations/${conversation.id}/messages`, {
      token: ws.adminToken,
      body: { content: "Check everything." },
    });
    expect(res.status).toBe(200);
    const offered = llm.requests[0]!.tools?.map((t) => t.function.name) ?? [];
    expect(offered).toContain("mcp__t_crm__lookup_order");
    expect(offered.some((n) => n.startsWith("mcp__t_down__"))).toBe(false);
    const system = JSON.stringify(llm.requests[0]!.messages[0]);
    expect(system).toContain("unavailable in this turn");
    expect(system).toContain("t:down");
  });

  it("offers at most 64 tools of a server, under distinct names of at most 64 characters, and cuts a huge result", async () => {
    const host = mcpHost("crm.mcp.test", { extraTools: 80, hugeResult: 100_000 });
    restorers.push(host.restore);
    const { ws, conversation } = await setup([{ slug: "crm", host: "crm.mcp.test" }]);
    const long = mcpToolName("t:crm", "report_number_3_of_the_quarterly_revenue_by_region_and_product");
    expect(long.length).toBeLessThanOrEqual(64);
    expect(long).not.toBe(mcpToolName("t:crm", "report_number_30_of_the_quarterly_revenue_by_region_and_product"));
    const llm = fakeLlm({ tool: long, args: {} }, { text: "Done." });
    restorers.push(llm.restore);
    const res = await call("POST", `/v1/api/conversations/${conversation.id}/messages`, {
      token: ws.adminToken,
      body: { content: "Report three, please." },
    });
    expect(res.status).toBe(200);
    const offered = llm.requests[0]!.tools?.map((t) => t.function.name) ?? [];
    expect(offered.filter((n) => n.startsWith("mcp__t_crm__"))).toHaveLength(64);
    expect(new Set(offered).size).toBe(offered.length);
    expect(offered.every((n) => /^[A-Za-z0-9_-]{1,64}$/.test(n))).toBe(true);
    expect(JSON.stringify(llm.requests[0]!.messages[0])).toContain("only their first 64 are offered");
    const answered = JSON.stringify(toolMessages(llm.requests[1]!));
    expect(answered).toContain("[cut: the result had 100000 characters, 32000 are shown]");
    expect(answered.length).toBeLessThan(40_000);
  });

  it("never reaches a private host, even as a custom server's URL", async () => {
    const ws = await signupWorkspace();
    for (const url of ["https://localhost/mcp", "https://127.0.0.1/mcp", "https://db.internal/mcp"])
      await expectProblem(await addCustom(ws.adminToken, { slug: `p${url.length}`, name: "P", url }), 400);
  });
});
