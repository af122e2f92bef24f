import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { AUDIT_EVENTS } from "../src/audit/events";
import { rememberFact } from "../src/memory/service";
import { createAgent, IMAGES } from "./support/agents";
import { call } from "./support/api";
import { seedConversation, uploadFile } from "./support/artifacts";
import { auditEvents, factEvent } from "./support/audit";
import { REDIRECT, registerClient } from "./support/oauth";
import { addUser, PASSWORD, signupWorkspace } from "./support/seed";
import { unique } from "./support/unique";

/**
 * Every state-changing operation of the OpenAPI document records its audit event on success,
 * every admin-only operation records a denied event when a non-admin calls it, and no event
 * carries a credential, a secret or a password.
 */

type Operation = { security?: Record<string, string[]>[]; requestBody?: unknown };
const DOC = (await (await call("GET", "/v1/openapi.json")).json()) as {
  paths: Record<string, Record<string, Operation>>;
};
const OPERATIONS = Object.entries(DOC.paths).flatMap(([path, ops]) =>
  Object.entries(ops).map(([method, op]) => ({
    method: method.toUpperCase(),
    path,
    op,
    key: `${method.toUpperCase()} ${path}`,
  })),
);

/** Credentials of every kind this service issues, in their wire shape. */
const SECRET_SHAPE = /svc_(?:pat|at|rt|code|ratk|csec|enroll)_[A-Za-z0-9_-]{16,}|Bearer\s+\S{16,}/;

type Ws = Awaited<ReturnType<typeof signupWorkspace>>;
type Success = {
  kind: string;
  /** Runs the operation successfully; returns the workspace whose log gets the event, and what the event must show. */
  run: (ws: Ws) => Promise<{ workspaceId?: string; target: string; intent: string; secrets?: string[] }>;
};

async function ok(res: Response, status = 200): Promise<Record<string, unknown>> {
  const text = await res.text();
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${text}`);
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

async function newAgent(ws: Ws) {
  return createAgent(ws.adminToken, { slug: `a-${unique()}`, display_name: "Audited" });
}

/** How each state-changing operation is made to succeed, and the event it must leave. */
const SUCCESS: Record<string, Success> = {
  "POST /v1/api/signup": {
    kind: "workspace.signup",
    run: async () => {
      const body = await ok(
        await call("POST", "/v1/api/signup", {
          body: { workspace_name: "Audited Co", email: `s-${unique()}@example.com`, password: PASSWORD },
        }),
        201,
      );
      const workspace = body.workspace as { id: string };
      return {
        workspaceId: workspace.id,
        target: `workspace:${workspace.id}`,
        intent: "create",
        secrets: [body.token as string],
      };
    },
  },
  "POST /v1/api/me/erase": {
    kind: "user.erase",
    run: async (ws) => {
      const member = await addUser(ws.adminToken, "member", ["agents:read"]);
      await ok(
        await call("POST", "/v1/api/me/erase", { token: member.token, body: { confirm: true, password: PASSWORD } }),
      );
      return { target: `user:${member.user.id}`, intent: "erase", secrets: [member.token] };
    },
  },
  "POST /v1/api/admin/users": {
    kind: "user.create",
    run: async (ws) => {
      const user = await ok(
        await call("POST", "/v1/api/admin/users", {
          token: ws.adminToken,
          body: { email: `u-${unique()}@example.com`, role: "member", password: PASSWORD },
        }),
        201,
      );
      return { target: `user:${user.id as string}`, intent: "create" };
    },
  },
  "POST /v1/api/admin/tokens": {
    kind: "token.create",
    run: async (ws) => {
      const created = await ok(
        await call("POST", "/v1/api/admin/tokens", {
          token: ws.adminToken,
          body: { name: "audited", scopes: ["agents:read"] },
        }),
        201,
      );
      return { target: `token:${created.id as string}`, intent: "create", secrets: [created.token as string] };
    },
  },
  "DELETE /v1/api/admin/tokens/{id}": {
    kind: "token.revoke",
    run: async (ws) => {
      const created = await ok(
        await call("POST", "/v1/api/admin/tokens", {
          token: ws.adminToken,
          body: { name: "to revoke", scopes: ["agents:read"] },
        }),
        201,
      );
      await ok(await call("DELETE", `/v1/api/admin/tokens/${created.id as string}`, { token: ws.adminToken }), 204);
      return { target: `token:${created.id as string}`, intent: "revoke", secrets: [created.token as string] };
    },
  },
  "POST /v1/admin/users/{id}/erase": {
    kind: "user.erase",
    run: async (ws) => {
      const member = await addUser(ws.adminToken, "member", ["agents:read"]);
      await ok(
        await call("POST", `/v1/admin/users/${member.user.id}/erase`, {
          token: ws.adminToken,
          body: { confirm: true },
        }),
      );
      return { target: `user:${member.user.id}`, intent: "erase", secrets: [member.token] };
    },
  },
  "POST /v1/agents": {
    kind: "agent.create",
    run: async (ws) => {
      const agent = await newAgent(ws);
      return { target: `agent:${agent.id}`, intent: "create" };
    },
  },
  "PATCH /v1/agents/{id}": {
    kind: "agent.update",
    run: async (ws) => {
      const agent = await newAgent(ws);
      await ok(
        await call("PATCH", `/v1/agents/${agent.id}`, { token: ws.adminToken, body: { display_name: "Renamed" } }),
      );
      return { target: `agent:${agent.id}`, intent: "update" };
    },
  },
  "DELETE /v1/agents/{id}": {
    kind: "agent.disable",
    run: async (ws) => {
      const agent = await newAgent(ws);
      await ok(await call("DELETE", `/v1/agents/${agent.id}`, { token: ws.adminToken }));
      return { target: `agent:${agent.id}`, intent: "disable" };
    },
  },
  "POST /v1/agents/{id}/enable": {
    kind: "agent.enable",
    run: async (ws) => {
      const agent = await newAgent(ws);
      await ok(await call("DELETE", `/v1/agents/${agent.id}`, { token: ws.adminToken }));
      await ok(await call("POST", `/v1/agents/${agent.id}/enable`, { token: ws.adminToken }));
      return { target: `agent:${agent.id}`, intent: "enable" };
    },
  },
  "POST /v1/agents/{id}/default": {
    kind: "agent.default",
    run: async (ws) => {
      const agent = await newAgent(ws);
      await ok(await call("POST", `/v1/agents/${agent.id}/default`, { token: ws.adminToken }));
      return { target: `agent:${agent.id}`, intent: "make_default" };
    },
  },
  "POST /v1/agents/{id}/avatar": {
    kind: "agent.avatar",
    run: async (ws) => {
      const agent = await newAgent(ws);
      await ok(
        await call("POST", `/v1/agents/${agent.id}/avatar`, {
          token: ws.adminToken,
          body: { image_base64: IMAGES.gif },
        }),
      );
      return { target: `agent:${agent.id}`, intent: "set_avatar" };
    },
  },
  "PUT /v1/agents/{id}/skills": {
    kind: "agent.skills",
    run: async (ws) => {
      const agent = await newAgent(ws);
      await ok(await call("PUT", `/v1/agents/${agent.id}/skills`, { token: ws.adminToken, body: { skills: [] } }));
      return { target: `agent:${agent.id}`, intent: "set_skills" };
    },
  },
  "PUT /v1/agents/{id}/mcp": {
    kind: "agent.mcp",
    run: async (ws) => {
      const agent = await newAgent(ws);
      await ok(await call("PUT", `/v1/agents/${agent.id}/mcp`, { token: ws.adminToken, body: { mcp_servers: [] } }));
      return { target: `agent:${agent.id}`, intent: "set_mcp_servers" };
    },
  },
  "PUT /v1/api/skills/{slug}": {
    kind: "skill.install",
    run: async (ws) => {
      await ok(await call("PUT", "/v1/api/skills/web-search", { token: ws.adminToken }));
      return { target: "skill:web-search", intent: "install" };
    },
  },
  "DELETE /v1/api/skills/{slug}": {
    kind: "skill.uninstall",
    run: async (ws) => {
      await ok(await call("DELETE", "/v1/api/skills/web-search", { token: ws.adminToken }));
      return { target: "skill:web-search", intent: "uninstall" };
    },
  },
  "PUT /v1/api/mcp/servers/{slug}": {
    kind: "mcp.install",
    run: async (ws) => {
      await ok(await call("PUT", "/v1/api/mcp/servers/github", { token: ws.adminToken }));
      return { target: "mcp_server:github", intent: "install" };
    },
  },
  "DELETE /v1/api/mcp/servers/{slug}": {
    kind: "mcp.uninstall",
    run: async (ws) => {
      await ok(await call("DELETE", "/v1/api/mcp/servers/github", { token: ws.adminToken }));
      return { target: "mcp_server:github", intent: "uninstall" };
    },
  },
  "POST /v1/api/admin/workspace/slug": {
    kind: "workspace.slug",
    run: async (ws) => {
      await ok(
        await call("POST", "/v1/api/admin/workspace/slug", { token: ws.adminToken, body: { slug: `ws-${unique()}` } }),
      );
      return { target: `workspace:${ws.workspace.id}`, intent: "rename" };
    },
  },
  "DELETE /v1/memory/facts/{id}": {
    kind: "memory.fact.delete",
    run: async (ws) => {
      const owner = { workspaceId: ws.workspace.id, userId: ws.user.id };
      const fact = await rememberFact(
        env,
        owner,
        { slug: "assistant", handles: ["assistant"] },
        "Audited fact",
        factEvent(owner),
      );
      await ok(await call("DELETE", `/v1/memory/facts/${fact!.id}`, { token: ws.adminToken }), 204);
      return { target: `memory_fact:${fact!.id}`, intent: "delete" };
    },
  },
  "PUT /v1/memory/freeze/{agent_slug}": {
    kind: "memory.freeze",
    run: async (ws) => {
      const agent = await newAgent(ws);
      await ok(await call("PUT", `/v1/memory/freeze/${agent.slug}`, { token: ws.adminToken, body: {} }));
      return { target: `agent:${agent.id}`, intent: "freeze" };
    },
  },
  "DELETE /v1/memory/freeze/{agent_slug}": {
    kind: "memory.unfreeze",
    run: async (ws) => {
      const agent = await newAgent(ws);
      await ok(await call("PUT", `/v1/memory/freeze/${agent.slug}`, { token: ws.adminToken, body: {} }));
      await ok(await call("DELETE", `/v1/memory/freeze/${agent.slug}`, { token: ws.adminToken }));
      return { target: `agent:${agent.id}`, intent: "unfreeze" };
    },
  },
  "POST /v1/api/email/endpoints": {
    kind: "email.endpoint.create",
    run: async (ws) => {
      const e = await ok(
        await call("POST", "/v1/api/email/endpoints", { token: ws.adminToken, body: { localpart: `c${unique()}` } }),
        201,
      );
      return { target: `email_endpoint:${e.id as string}`, intent: "create" };
    },
  },
  "PATCH /v1/api/email/endpoints/{id}": {
    kind: "email.endpoint.update",
    run: async (ws) => {
      const e = await ok(
        await call("POST", "/v1/api/email/endpoints", { token: ws.adminToken, body: { localpart: `u${unique()}` } }),
        201,
      );
      await ok(
        await call("PATCH", `/v1/api/email/endpoints/${e.id as string}`, {
          token: ws.adminToken,
          body: { enabled: false },
        }),
      );
      return { target: `email_endpoint:${e.id as string}`, intent: "update" };
    },
  },
  "DELETE /v1/api/email/endpoints/{id}": {
    kind: "email.endpoint.delete",
    run: async (ws) => {
      const e = await ok(
        await call("POST", "/v1/api/email/endpoints", { token: ws.adminToken, body: { localpart: `d${unique()}` } }),
        201,
      );
      await ok(await call("DELETE", `/v1/api/email/endpoints/${e.id as string}`, { token: ws.adminToken }), 204);
      return { target: `email_endpoint:${e.id as string}`, intent: "delete" };
    },
  },
  "POST /v1/mcp/custom": {
    kind: "mcp.custom.create",
    run: async (ws) => {
      await ok(
        await call("POST", "/v1/mcp/custom", {
          token: ws.adminToken,
          body: { slug: `c${unique()}`, name: "C", url: "https://c.test/mcp" },
        }),
        201,
      );
      const list = await ok(await call("GET", "/v1/mcp/custom", { token: ws.adminToken }));
      const slug = (list.integrations as { slug: string }[])[0]!.slug;
      return { target: `mcp_server:${slug}`, intent: "create" };
    },
  },
  "DELETE /v1/mcp/custom/{slug}": {
    kind: "mcp.custom.delete",
    run: async (ws) => {
      const slug = `d${unique()}`;
      await ok(
        await call("POST", "/v1/mcp/custom", {
          token: ws.adminToken,
          body: { slug, name: "D", url: "https://d.test/mcp" },
        }),
        201,
      );
      await ok(await call("DELETE", `/v1/mcp/custom/t:${slug}`, { token: ws.adminToken }), 204);
      return { target: `mcp_server:t:${slug}`, intent: "delete" };
    },
  },
  "POST /v1/mcp/connectors": {
    kind: "mcp.connector.create",
    run: async (ws) => {
      const c = await ok(
        await call("POST", "/v1/mcp/connectors", { token: ws.adminToken, body: { name: "Audited" } }),
        201,
      );
      return { target: `mcp_connector:${c.connector_id as string}`, intent: "create" };
    },
  },
  "DELETE /v1/mcp/connectors/{id}": {
    kind: "mcp.connector.revoke",
    run: async (ws) => {
      const c = await ok(
        await call("POST", "/v1/mcp/connectors", { token: ws.adminToken, body: { name: "Gone" } }),
        201,
      );
      await ok(await call("DELETE", `/v1/mcp/connectors/${c.connector_id as string}`, { token: ws.adminToken }), 204);
      return { target: `mcp_connector:${c.connector_id as string}`, intent: "revoke" };
    },
  },
  "PUT /v1/api/business-profile": {
    kind: "profile.update",
    run: async (ws) => {
      // overrides only: a domain would queue a crawl of a site this file does not fake
      await ok(await call("PUT", "/v1/api/business-profile", { token: ws.adminToken, body: { industry: "Retail" } }));
      return { target: `workspace:${ws.workspace.id}`, intent: "update" };
    },
  },
  "POST /v1/api/conversations/{id}/artifacts": {
    kind: "artifact.create",
    run: async (ws) => {
      const conversation = await seedConversation(ws.workspace.id, ws.user.id);
      const artifact = await ok(await uploadFile(ws.adminToken, conversation, { name: "a.txt", content: "a" }), 201);
      return { target: `artifact:${artifact.id as string}`, intent: "upload" };
    },
  },
  "DELETE /v1/api/artifacts/{id}": {
    kind: "artifact.delete",
    run: async (ws) => {
      const conversation = await seedConversation(ws.workspace.id, ws.user.id);
      const artifact = await ok(await uploadFile(ws.adminToken, conversation, { name: "d.txt", content: "d" }), 201);
      await ok(await call("DELETE", `/v1/api/artifacts/${artifact.id as string}`, { token: ws.adminToken }));
      return { target: `artifact:${artifact.id as string}`, intent: "delete" };
    },
  },
  "POST /v1/oauth/register": {
    kind: "oauth.client.register",
    run: async (ws) => {
      const client = await registerClient(ws.adminToken, { token_endpoint_auth_method: "client_secret_post" });
      return {
        target: `oauth_client:${client.client_id}`,
        intent: "register",
        secrets: [client.client_secret!, client.registration_access_token!],
      };
    },
  },
  "PUT /v1/oauth/register/{client_id}": {
    kind: "oauth.client.update",
    run: async (ws) => {
      const client = await registerClient(ws.adminToken);
      await ok(
        await call("PUT", `/v1/oauth/register/${client.client_id}`, {
          token: client.registration_access_token!,
          body: { redirect_uris: [REDIRECT], scope: "agents:read", client_name: "Renamed" },
        }),
      );
      return {
        target: `oauth_client:${client.client_id}`,
        intent: "update",
        secrets: [client.registration_access_token!],
      };
    },
  },
  "DELETE /v1/oauth/register/{client_id}": {
    kind: "oauth.client.delete",
    run: async (ws) => {
      const client = await registerClient(ws.adminToken);
      await ok(
        await call("DELETE", `/v1/oauth/register/${client.client_id}`, { token: client.registration_access_token! }),
        204,
      );
      return {
        target: `oauth_client:${client.client_id}`,
        intent: "delete",
        secrets: [client.registration_access_token!],
      };
    },
  },
};

/** Non-GET operations whose successful event is asserted elsewhere (they need a model, a browser or an OAuth grant). */
const COVERED_ELSEWHERE: Record<string, string> = {
  "POST /v1/agents/{id}/avatar/generate": "agents-avatar.test.ts (agent.avatar, intent generate_avatar)",
  "POST /v1/agents/{id}/suggest-instructions": "agents-llm.test.ts (agent.suggest)",
  "POST /v1/agent-browser/ask": "browser.test.ts (browser.ask, success and denied)",
  "POST /v1/oauth/revoke": "oauth-token.test.ts (oauth.grant.revoke)",
  "POST /v1/oauth/token":
    "issues tokens from an audited consent; replays are audited as oauth.token.reuse (oauth-token.test.ts)",
  "POST /v1/oauth/introspect": "reads only",
  "POST /v1/api/billing/checkout": "billing.test.ts (billing.checkout, billing.customer; needs the fake Stripe)",
  "POST /v1/api/billing/portal": "billing.test.ts (billing.portal; needs the fake Stripe)",
  "POST /v1/api/billing/topup": "billing.test.ts (billing.topup; needs the fake Stripe)",
  "POST /v1/api/conversations": "conversations.test.ts (conversation.create)",
  "DELETE /v1/api/conversations/{id}": "conversations.test.ts (conversation.delete)",
  "POST /v1/api/conversations/{id}/participants": "conversations.test.ts (conversation.participant.add)",
  "POST /v1/api/conversations/{id}/messages": "conversations.test.ts (conversation.turn; needs a model)",
  "POST /v1/api/conversations/{id}/stop":
    "conversation-rooms.test.ts (the stopped turn's conversation.turn, finish stopped; needs a model)",
  "POST /v1/api/conversations/{id}/approvals/{approval_id}":
    "approvals.test.ts (approval.requested and approval.decided, approved, denied and expired; needs a model)",
  "POST /v1/api/chat": "chat.test.ts (conversation.create for a new chat id, conversation.turn; needs a model)",
  "POST /v1/api/ask": "conversations.test.ts (conversation.create in fast mode; needs a model)",
  "POST /v1/chat/completions": "openai.test.ts (conversation.create and conversation.turn; needs a model)",
  "DELETE /v1/api/apps/{id}": "apps.test.ts (app.destroy, success and denied; needs a published app)",
  "POST /v1/api/integrations/slack/install":
    "changes nothing: answers a signed URL; the install is audited at the callback (teamchat.test.ts)",
  "DELETE /v1/api/integrations/slack": "teamchat.test.ts (teamchat.uninstall; needs the fake Slack)",
  "POST /v1/mcp/connectors/enroll": "mcp-connectors.test.ts (mcp.connector.enroll; needs a workspace CA)",
  "POST /v1/api/email/replies/{email_message_id}/review":
    "email.test.ts (email.review and email.send; needs a reply drafted by a model)",
  "POST /v1/api/artifacts/{id}/deliver": "teamchat.test.ts (teamchat.deliver; needs the fake Slack)",
  "POST /v1/webhooks/slack": "teamchat.test.ts (teamchat.uninstall by app_uninstalled / tokens_revoked; signed events)",
  "POST /v1/webhooks/stripe": "billing-webhook.test.ts (billing.credit, billing.refund, billing.plan; signed events)",
  "POST /v1/mcp":
    "mcp-server.test.ts (ask_agent records conversation.create and conversation.turn; needs a model; the other calls read only)",
  "DELETE /v1/mcp": "changes nothing: 405, the MCP endpoint has no sessions to end",
};

describe("audit events of state-changing operations", () => {
  let ws: Ws;
  beforeAll(async () => {
    ws = await signupWorkspace();
  });

  it("every non-GET operation of the document is covered here or named with where it is covered", () => {
    const uncovered = OPERATIONS.filter((o) => o.method !== "GET" && !SUCCESS[o.key] && !COVERED_ELSEWHERE[o.key]).map(
      (o) => o.key,
    );
    expect(uncovered).toEqual([]);
  });

  for (const [key, s] of Object.entries(SUCCESS)) {
    it(`${key} records ${s.kind} with its target and intent, and nothing secret`, async () => {
      const shown = await s.run(ws);
      const workspaceId = shown.workspaceId ?? ws.workspace.id;
      const [event] = (await auditEvents(workspaceId, s.kind)).filter((e) => e.target === shown.target);
      expect(event, `no ${s.kind} event for ${shown.target}`).toBeDefined();
      expect(event).toMatchObject({ kind: s.kind, outcome: "success", intent: shown.intent });
      const text = JSON.stringify(event);
      expect(text).not.toMatch(SECRET_SHAPE);
      expect(text).not.toContain(PASSWORD);
      for (const secret of shown.secrets ?? []) expect(text).not.toContain(secret);
      // target and intent are hashed in the clear: ids and verbs only, never an email address
      expect(`${event!.target} ${event!.intent}`).not.toContain("@");
    });
  }
});

describe("denied events of admin refusals", () => {
  const ADMIN_OPERATIONS = OPERATIONS.filter((o) =>
    o.op.security?.some((s) =>
      Object.values(s).some((scopes) => scopes.includes("admin") || scopes.includes("role:admin")),
    ),
  );

  it("the document has admin-only operations to check", () => {
    expect(ADMIN_OPERATIONS.length).toBeGreaterThan(20);
  });

  for (const o of ADMIN_OPERATIONS) {
    it(`${o.key}: a member is refused with 403 admin_required and the refusal is recorded`, async () => {
      const ws = await signupWorkspace();
      const member = await addUser(ws.adminToken, "member", ["agents:read", "conversations:read"]);
      const path = o.path.replace(/\{([^}]+)\}/g, (_, name: string) =>
        name === "slug" ? "web-search" : crypto.randomUUID(),
      );
      const res = await call(o.method, path, { token: member.token, body: o.op.requestBody ? {} : undefined });
      expect(res.status).toBe(403);
      expect(((await res.json()) as { code: string }).code).toBe("admin_required");
      const denied = await auditEvents(ws.workspace.id, "access.denied");
      expect(denied.map((e) => [e.outcome, e.actor_id, e.target, e.intent])).toEqual([
        ["denied", member.user.id, `route:${o.method} ${o.path.replace(/\{([^}]+)\}/g, ":$1")}`, "admin"],
      ]);
      expect(JSON.stringify(denied)).not.toContain(member.token);
    });
  }
});

describe("the details allow-list", () => {
  // Field names that sound like credentials but hold none: a token row's id, which kind of
  // token was replayed, a client's authentication method name, a WebSocket close code.
  const VETTED = new Set([
    "browser.connect.token_id",
    "browser.disconnect.token_id",
    "browser.disconnect.code",
    "oauth.token.reuse.token_kind",
    "oauth.client.register.token_endpoint_auth_method",
  ]);

  it("names no field that could carry a token, a secret or a password", () => {
    const risky = Object.entries(AUDIT_EVENTS).flatMap(([kind, shape]) =>
      Object.keys(shape.shape)
        .filter(
          (f) =>
            !VETTED.has(`${kind}.${f}`) &&
            /token|secret|password|passwd|cookie|authorization|api_?key|credential|verifier|^code$|header/i.test(f),
        )
        .map((f) => `${kind}.${f}`),
    );
    expect(risky).toEqual([]);
  });
});
