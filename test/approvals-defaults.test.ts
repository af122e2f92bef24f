/**
 * The calls that wait for approval with no `approval_required` at all: MCP tools their server
 * marks `destructiveHint: true` (a real v2 SDK server, reached through a `fetch` wrapper) and
 * `publish_app` with public visibility.
 */
import { env } from "cloudflare:workers";
import { createMcpHandler, McpServer } from "@modelcontextprotocol/server";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ApprovalListSchema } from "../src/conversations/approval-schemas";
import { ConversationSchema, TurnResponseSchema } from "../src/conversations/schemas";
import { call, parse } from "./support/api";
import { auditEvents } from "./support/audit";
import { eventually } from "./support/browser";
import { inRoom } from "./support/rooms";
import { scriptedModels } from "./support/scripted-llm";
import { signupWorkspace } from "./support/seed";

const { script } = scriptedModels();
const HOST = "crm.approvals.test";

/** A 2026-07-28 CRM server: `lookup_contact` reads, `delete_contact` is marked destructive. */
function crmServer() {
  const calls: string[] = [];
  const factory = () => {
    const server = new McpServer({ name: "crm", version: "2.0.0" }, { capabilities: { tools: {} } });
    server.registerTool(
      "lookup_contact",
      {
        description: "Finds a contact",
        inputSchema: z.object({ email: z.string() }),
        annotations: { readOnlyHint: true },
      },
      async ({ email }) => {
        calls.push(`lookup ${email}`);
        return { content: [{ type: "text", text: `${email} is Ada` }] };
      },
    );
    server.registerTool(
      "delete_contact",
      {
        description: "Deletes a contact for good",
        inputSchema: z.object({ email: z.string() }),
        annotations: { destructiveHint: true },
      },
      async ({ email }) => {
        calls.push(`delete ${email}`);
        return { content: [{ type: "text", text: `${email} deleted` }] };
      },
    );
    return server;
  };
  const serve = createMcpHandler(factory).fetch;
  const original = globalThis.fetch;
  globalThis.fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    return new URL(req.url).hostname === HOST ? serve(req) : original(input, init);
  };
  return { calls, restore: () => (globalThis.fetch = original) };
}

let restore: (() => void) | null = null;
afterEach(() => {
  restore?.();
  restore = null;
});

async function conversationWith(token: string) {
  return parse(await call("POST", "/v1/api/conversations", { token, body: {} }), ConversationSchema);
}

const ask = (token: string, id: string, content: string) =>
  call("POST", `/v1/api/conversations/${id}/messages`, { token, body: { content } });

const pendingOf = async (token: string) =>
  (await parse(await call("GET", "/v1/api/approvals", { token }), ApprovalListSchema)).approvals;

const turnState = (conversationId: string) =>
  inRoom(
    conversationId,
    (room) =>
      room.ctx.storage.sql.exec<{ state: string }>("SELECT state FROM turns ORDER BY position DESC").one().state,
  );

describe("destructiveHint: true from a real MCP SDK server", () => {
  it("makes the call wait with no approval_required; a read-only tool runs at once; approved, it runs once", async () => {
    const server = crmServer();
    restore = server.restore;
    const ws = await signupWorkspace();
    const added = await call("POST", "/v1/mcp/custom", {
      token: ws.adminToken,
      body: {
        slug: "crm",
        name: "CRM",
        url: `https://${HOST}/mcp`,
        headers: { Authorization: "Bearer crm-SECRET-key" },
      },
    });
    expect(added.status).toBe(201);
    const c = await conversationWith(ws.adminToken);
    script(
      { tool: "mcp__t_crm__lookup_contact", args: { email: "ada@example.com" } },
      { tool: "mcp__t_crm__delete_contact", args: { email: "ada@example.com" } },
      { text: "Ada is gone." },
    );
    const paused = await ask(ws.adminToken, c.id, "Remove Ada from the CRM");
    expect(paused.status).toBe(200);
    expect(server.calls).toEqual(["lookup ada@example.com"]);
    expect(await turnState(c.id)).toBe("awaiting_approval");
    const [approval] = await pendingOf(ws.adminToken);
    expect(approval).toMatchObject({ tool_name: "mcp__t_crm__delete_contact", state: "pending" });

    const decided = await call("POST", `/v1/api/conversations/${c.id}/approvals/${approval!.id}`, {
      token: ws.adminToken,
      body: { approved: true },
    });
    expect(decided.status).toBe(202);
    await eventually(async () => (await turnState(c.id)) === "completed");
    expect(server.calls).toEqual(["lookup ada@example.com", "delete ada@example.com"]);

    // Neither the arguments nor the server's credentials reach the audit log.
    const events = [
      ...(await auditEvents(ws.workspace.id, "approval.requested")),
      ...(await auditEvents(ws.workspace.id, "approval.decided")),
    ];
    expect(events).toHaveLength(2);
    for (const text of ["ada@example.com", "crm-SECRET-key"]) expect(JSON.stringify(events)).not.toContain(text);
  });
});

describe("publish_app", () => {
  const files = [{ path: "index.html", content: "<h1>Hello</h1>" }];

  it("with public visibility waits for approval; a private one is published at once", async () => {
    const ws = await signupWorkspace();
    const c = await conversationWith(ws.adminToken);
    script(
      { tool: "publish_app", args: { title: "Private page", files, visibility: "private" } },
      { text: "Published privately." },
    );
    const first = await parse(await ask(ws.adminToken, c.id, "Publish it privately"), TurnResponseSchema);
    expect(first.reply.tool_calls).toEqual([{ name: "publish_app", ok: true }]);
    expect(await pendingOf(ws.adminToken)).toEqual([]);

    script({ tool: "publish_app", args: { title: "Public page", files, visibility: "public" } });
    const paused = await ask(ws.adminToken, c.id, "Now publish it for everyone");
    expect(paused.status).toBe(200);
    const [approval] = await pendingOf(ws.adminToken);
    expect(approval).toMatchObject({ tool_name: "publish_app", state: "pending" });
    const apps = await env.DB.prepare("SELECT title, visibility FROM apps WHERE workspace_id = ?1")
      .bind(ws.workspace.id)
      .all<{ title: string; visibility: string }>();
    expect(apps.results).toEqual([{ title: "Private page", visibility: "private" }]);
  });
});
