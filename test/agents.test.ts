import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_AGENT_INSTRUCTIONS } from "../src/agents/defaults";
import { AgentListSchema, AgentRowSchema } from "../src/agents/schemas";
import { createAgent, getAgent, handlesOf, IMAGES } from "./support/agents";
import { call, expectProblem, parse } from "./support/api";
import { auditEvents } from "./support/audit";
import { fetchWithDb, watchedDb } from "./support/d1";
import { registerClient, signIn, tokensFor } from "./support/oauth";
import { addUser, issueToken, signupWorkspace } from "./support/seed";
import { unique } from "./support/unique";

const UNKNOWN_ID = "0190f5e2-7c1a-7000-8000-000000000000";

async function listAgents(token: string) {
  const res = await call("GET", "/v1/agents", { token });
  expect(res.status).toBe(200);
  return (await parse(res, AgentListSchema)).agents;
}

async function patch(token: string, id: string, body: unknown) {
  return call("PATCH", `/v1/agents/${id}`, { token, body });
}

describe("who may call the agents routes", () => {
  let ws: Awaited<ReturnType<typeof signupWorkspace>>;
  let member: string;
  let noRead: string;
  let adminNoAdminScope: string;
  let otherAdmin: string;
  let agentId: string;

  beforeAll(async () => {
    ws = await signupWorkspace();
    member = (await addUser(ws.adminToken, "member", ["agents:read", "agents:write", "conversations:read"])).token;
    noRead = (await addUser(ws.adminToken, "member", ["conversations:read"])).token;
    adminNoAdminScope = await issueToken(ws.adminToken, ws.user.id, ["agents:read"]);
    otherAdmin = (await signupWorkspace()).adminToken;
    agentId = (await createAgent(ws.adminToken, { slug: "matrix", display_name: "Matrix" })).id;
  });

  // Every route taking an agent id: its method, its path suffix, a valid body, and whether it is a read.
  const ROUTES: { method: string; suffix: string; body?: unknown; read?: boolean }[] = [
    { method: "GET", suffix: "", read: true },
    { method: "PATCH", suffix: "", body: { display_name: "Renamed" } },
    { method: "DELETE", suffix: "" },
    { method: "POST", suffix: "/enable" },
    { method: "POST", suffix: "/default" },
    { method: "POST", suffix: "/avatar", body: { image_base64: IMAGES.png } },
    { method: "POST", suffix: "/avatar/generate", body: {} },
    { method: "GET", suffix: "/skills", read: true },
    { method: "PUT", suffix: "/skills", body: { skills: [] } },
    { method: "GET", suffix: "/mcp", read: true },
    { method: "PUT", suffix: "/mcp", body: { mcp_servers: [] } },
    { method: "POST", suffix: "/suggest-instructions" },
  ];

  for (const r of ROUTES) {
    const label = `${r.method} /v1/agents/{id}${r.suffix}`;

    it(`${label}: no credential is 401, a bad one is 401`, async () => {
      await expectProblem(
        await call(r.method, `/v1/agents/${agentId}${r.suffix}`, { body: r.body }),
        401,
        "unauthenticated",
      );
      await expectProblem(
        await call(r.method, `/v1/agents/${agentId}${r.suffix}`, { token: "svc_pat_nope", body: r.body }),
        401,
        "invalid_token",
      );
    });

    if (r.read) {
      it(`${label}: a member with agents:read may read; a token without it is 403`, async () => {
        expect((await call(r.method, `/v1/agents/${agentId}${r.suffix}`, { token: member })).status).toBe(200);
        await expectProblem(
          await call(r.method, `/v1/agents/${agentId}${r.suffix}`, { token: noRead }),
          403,
          "insufficient_scope",
        );
      });
    } else {
      it(`${label}: a member is 403, and so is an admin's token without the admin scope`, async () => {
        await expectProblem(
          await call(r.method, `/v1/agents/${agentId}${r.suffix}`, { token: member, body: r.body }),
          403,
          "admin_required",
        );
        await expectProblem(
          await call(r.method, `/v1/agents/${agentId}${r.suffix}`, { token: adminNoAdminScope, body: r.body }),
          403,
          "admin_required",
        );
      });
    }

    it(`${label}: another workspace's agent and an unknown id are 404, a malformed id is 400`, async () => {
      await expectProblem(
        await call(r.method, `/v1/agents/${agentId}${r.suffix}`, { token: otherAdmin, body: r.body }),
        404,
        "not_found",
      );
      await expectProblem(
        await call(r.method, `/v1/agents/${UNKNOWN_ID}${r.suffix}`, { token: ws.adminToken, body: r.body }),
        404,
        "not_found",
      );
      await expectProblem(
        await call(r.method, `/v1/agents/not-a-uuid${r.suffix}`, { token: ws.adminToken, body: r.body }),
        400,
        "validation_failed",
      );
    });
  }

  it("GET /v1/agents needs agents:read; POST /v1/agents needs an admin", async () => {
    expect((await call("GET", "/v1/agents", { token: member })).status).toBe(200);
    await expectProblem(await call("GET", "/v1/agents", { token: noRead }), 403, "insufficient_scope");
    await expectProblem(await call("GET", "/v1/agents"), 401);
    await expectProblem(
      await call("POST", "/v1/agents", { token: member, body: { slug: "nope", display_name: "Nope" } }),
      403,
      "admin_required",
    );
    await expectProblem(
      await call("POST", "/v1/agents", { token: adminNoAdminScope, body: { slug: "nope", display_name: "Nope" } }),
      403,
    );
    const { results } = await env.DB.prepare("SELECT id FROM agents WHERE slug = 'nope'").all();
    expect(results).toHaveLength(0);
  });

  it("records refused admin calls as denied audit events", async () => {
    await call("DELETE", `/v1/agents/${agentId}`, { token: member });
    const denied = await auditEvents(ws.workspace.id, "access.denied");
    expect(denied.some((e) => e.target === "route:DELETE /v1/agents/:id" && e.outcome === "denied")).toBe(true);
  });

  it("lists only the caller's own workspace's agents", async () => {
    const mine = await listAgents(ws.adminToken);
    const theirs = await listAgents(otherAdmin);
    expect(mine.map((a) => a.id)).toContain(agentId);
    expect(theirs.map((a) => a.id)).not.toContain(agentId);
    expect(theirs.map((a) => a.slug)).toEqual(["assistant"]);
  });
});

describe("GET /v1/agents: the credential check and the list in one D1 round trip", () => {
  it("reads the list in the token check's batch once the isolate knows the token, with the same answer", async () => {
    const ws = await signupWorkspace();
    const token = await issueToken(ws.adminToken, ws.user.id, ["agents:read"]);
    await createAgent(ws.adminToken, { slug: "batched", display_name: "Batched" });
    const watched = watchedDb();
    const first = await fetchWithDb(watched, "GET", "/v1/agents", { token });
    expect(first.res.status).toBe(200);
    const body = (await first.res.json()) as { agents: { slug: string }[] };
    // The first check learns the token's workspace: the list is a second round trip (and the
    // token's first use writes its last_used_at).
    expect(first.trips).toBeGreaterThan(1);
    const again = await fetchWithDb(watched, "GET", "/v1/agents", { token });
    expect(again.res.status).toBe(200);
    expect(again.trips).toBe(1);
    expect(await again.res.json()).toEqual(body);
    expect(body.agents.map((a) => a.slug)).toEqual(["assistant", "batched"]);
  });

  it("does it for an OAuth access token too", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken, { scope: "agents:read" });
    const tokens = await tokensFor(await signIn(ws.email), client, "agents:read");
    const watched = watchedDb();
    const first = await fetchWithDb(watched, "GET", "/v1/agents", { token: tokens.access_token });
    expect(first.res.status).toBe(200);
    const again = await fetchWithDb(watched, "GET", "/v1/agents", { token: tokens.access_token });
    expect(again.res.status).toBe(200);
    expect(again.trips).toBe(1);
    expect(await again.res.json()).toEqual(await first.res.json());
  });

  // "Effective scopes of a request = token scopes ∩ user's ceiling, computed at request time
  // (a demoted user loses power at once)": nothing of the caller is kept between requests.
  it("refuses a token at once once it is revoked or loses the scope, with nothing of the list in the answer", async () => {
    const ws = await signupWorkspace();
    const member = await addUser(ws.adminToken, "member", ["agents:read"]);
    const admin = await addUser(ws.adminToken, "admin", ["admin", "agents:read"]);
    const watched = watchedDb();
    for (const token of [member.token, admin.token]) {
      expect((await fetchWithDb(watched, "GET", "/v1/agents", { token })).res.status).toBe(200);
      expect((await fetchWithDb(watched, "GET", "/v1/agents", { token })).trips).toBe(1);
    }

    const tokens = await call("GET", "/v1/api/admin/tokens", { token: ws.adminToken });
    const memberToken = ((await tokens.json()) as { tokens: { id: string; user_id: string }[] }).tokens.find(
      (t) => t.user_id === member.user.id,
    )!;
    expect((await call("DELETE", `/v1/api/admin/tokens/${memberToken.id}`, { token: ws.adminToken })).ok).toBe(true);
    const revoked = await fetchWithDb(watched, "GET", "/v1/agents", { token: member.token });
    const problem = await expectProblem(revoked.res, 401, "invalid_token");
    expect(JSON.stringify(problem)).not.toContain("assistant");

    await env.DB.prepare("UPDATE api_tokens SET scopes = ? WHERE user_id = ?")
      .bind(JSON.stringify(["conversations:read"]), admin.user.id)
      .run();
    const narrowed = await fetchWithDb(watched, "GET", "/v1/agents", { token: admin.token });
    await expectProblem(narrowed.res, 403, "insufficient_scope");
  });
});

describe("POST /v1/agents", () => {
  it("creates an enabled, non-default agent with defaults for what was not sent and a generated avatar", async () => {
    const ws = await signupWorkspace();
    const res = await call("POST", "/v1/agents", {
      token: ws.adminToken,
      body: { slug: "sales", display_name: "Sales Desk" },
    });
    expect(res.status).toBe(200);
    const agent = await parse(res, AgentRowSchema);
    expect(agent).toMatchObject({
      slug: "sales",
      display_name: "Sales Desk",
      aliases: [],
      cautions: [],
      languages: [],
      runtime_profile: "standard",
      delivery_mode: "chat",
      status: "enabled",
      is_default: false,
      instructions_is_default: true,
      instructions: null,
      description: null,
      model: null,
      tone: null,
      verbosity: null,
    });
    expect(agent.avatar_url).toMatch(new RegExp(`^https://svc\\.test/v1/avatars/${ws.workspace.id}/[0-9a-f]{64}$`));
    const avatar = await call("GET", new URL(agent.avatar_url!).pathname);
    expect(avatar.status).toBe(200);
    expect(avatar.headers.get("Content-Type")).toBe("image/svg+xml");
    const svg = await avatar.text();
    expect(svg).toContain(">SD</text>");
    expect(await handlesOf(agent.id)).toEqual(["sales"]);

    const [event] = await auditEvents(ws.workspace.id, "agent.create");
    expect(event).toMatchObject({
      target: `agent:${agent.id}`,
      intent: "create",
      agent_id: agent.id,
      actor_kind: "token",
      actor_id: ws.user.id,
    });
    expect(event!.details).toEqual({
      slug: "sales",
      display_name: "Sales Desk",
      aliases: [],
      runtime_profile: "standard",
      model: null,
      avatar: "monogram",
    });
  });

  it("the generated avatar is deterministic: same slug and name, same URL; another slug, another colour", async () => {
    const a = await signupWorkspace();
    const one = await createAgent(a.adminToken, { slug: "ops", display_name: "Ops" });
    await call("PATCH", `/v1/agents/${one.id}`, { token: a.adminToken, body: { slug: "ops-old" } });
    await call("PATCH", `/v1/agents/${one.id}`, { token: a.adminToken, body: { aliases: [] } });
    const two = await createAgent(a.adminToken, { slug: "ops", display_name: "Ops" });
    expect(two.avatar_url).toBe(one.avatar_url);
    const three = await createAgent(a.adminToken, { slug: "ops2", display_name: "Ops" });
    expect(three.avatar_url).not.toBe(one.avatar_url);
  });

  it("takes every field of the create request", async () => {
    const ws = await signupWorkspace();
    for (const s of ["web-search", "code-interpreter"])
      expect((await call("PUT", `/v1/api/skills/${s}`, { token: ws.adminToken })).status).toBe(200);
    expect((await call("PUT", "/v1/api/mcp/servers/github", { token: ws.adminToken })).status).toBe(200);
    const body = {
      slug: "support-bot",
      display_name: "Support",
      description: "Answers customer questions",
      instructions: "Help customers with orders.",
      tone: "friendly",
      verbosity: "concise",
      cautions: ["legal advice", "pricing promises"],
      languages: ["en-us", "fr", "de-CH"],
      aliases: ["help-desk", "care"],
      runtime_profile: "reasoning",
      model: "qwq-32b",
      avatar_url: "https://cdn.example.com/a.png",
      skills: ["web-search", "web-search", "code-interpreter"],
      mcp_servers: ["github"],
    };
    const agent = await createAgent(ws.adminToken, body);
    const { skills: _s, mcp_servers: _m, ...fields } = body;
    expect(agent).toMatchObject({
      ...fields,
      languages: ["en-US", "fr", "de-CH"],
      instructions_is_default: false,
      status: "enabled",
      is_default: false,
    });
    expect(await handlesOf(agent.id)).toEqual(["care", "help-desk", "support-bot"]);
    const skills = await call("GET", `/v1/agents/${agent.id}/skills`, { token: ws.adminToken });
    expect(await skills.json()).toEqual({ skills: ["web-search", "code-interpreter"] });
    const mcp = await call("GET", `/v1/agents/${agent.id}/mcp`, { token: ws.adminToken });
    expect(await mcp.json()).toEqual({ mcp_servers: ["github"] });
    const [event] = await auditEvents(ws.workspace.id, "agent.create");
    expect(event!.details).toMatchObject({ avatar: "url", aliases: ["help-desk", "care"], model: "qwq-32b" });
  });

  it("refuses initial skills or MCP servers that are not installed", async () => {
    const ws = await signupWorkspace();
    const s = await expectProblem(
      await call("POST", "/v1/agents", {
        token: ws.adminToken,
        body: { slug: "a1", display_name: "A", skills: ["web-search"] },
      }),
      400,
      "skill_not_installed",
    );
    expect(s.errors).toEqual([{ path: "skills.0", message: expect.stringContaining("web-search") }]);
    await expectProblem(
      await call("POST", "/v1/agents", {
        token: ws.adminToken,
        body: { slug: "a1", display_name: "A", mcp_servers: ["linear"] },
      }),
      400,
      "mcp_server_not_installed",
    );
    await expectProblem(
      await call("POST", "/v1/agents", {
        token: ws.adminToken,
        body: { slug: "a1", display_name: "A", skills: ["no-such-skill"] },
      }),
      400,
      "skill_not_installed",
    );
    expect(await listAgents(ws.adminToken)).toHaveLength(1);
  });

  const BAD_BODIES: [string, Record<string, unknown>][] = [
    ["missing slug", { display_name: "X" }],
    ["missing display_name", { slug: "xx" }],
    ["blank display_name", { slug: "xx", display_name: "   " }],
    ["display_name over 100", { slug: "xx", display_name: "x".repeat(101) }],
    ["display_name with a newline", { slug: "xx", display_name: "a\nb" }],
    ["slug not a string", { slug: 12, display_name: "X" }],
    ["unknown tone", { slug: "xx", display_name: "X", tone: "sarcastic" }],
    ["unknown verbosity", { slug: "xx", display_name: "X", verbosity: "epic" }],
    ["unknown runtime profile", { slug: "xx", display_name: "X", runtime_profile: "turbo" }],
    ["languages not BCP-47", { slug: "xx", display_name: "X", languages: ["en_US"] }],
    ["languages repeated after canonicalising", { slug: "xx", display_name: "X", languages: ["en-US", "en-us"] }],
    [
      "more than 10 languages",
      { slug: "xx", display_name: "X", languages: ["en", "fr", "de", "es", "it", "pt", "nl", "sv", "da", "fi", "no"] },
    ],
    ["an empty caution", { slug: "xx", display_name: "X", cautions: [" "] }],
    ["a caution over 200", { slug: "xx", display_name: "X", cautions: ["x".repeat(201)] }],
    ["a multi-line caution", { slug: "xx", display_name: "X", cautions: ["one\ntwo"] }],
    [
      "more than 20 cautions",
      { slug: "xx", display_name: "X", cautions: Array.from({ length: 21 }, (_, i) => `c${i}`) },
    ],
    ["cautions not a list", { slug: "xx", display_name: "X", cautions: "pricing" }],
    ["a relative avatar_url", { slug: "xx", display_name: "X", avatar_url: "/img/a.png" }],
    ["a javascript: avatar_url", { slug: "xx", display_name: "X", avatar_url: "javascript:alert(1)" }],
    ["an unknown field", { slug: "xx", display_name: "X", displayName: "typo" }],
    [
      "more than 10 aliases",
      { slug: "xx", display_name: "X", aliases: Array.from({ length: 11 }, (_, i) => `al${i}`) },
    ],
    ["blank instructions", { slug: "xx", display_name: "X", instructions: "" }],
  ];
  for (const [name, body] of BAD_BODIES) {
    it(`400 for ${name}`, async () => {
      const ws = await signupWorkspace();
      const p = await expectProblem(
        await call("POST", "/v1/agents", { token: ws.adminToken, body }),
        400,
        "validation_failed",
      );
      expect(p.errors?.length).toBeGreaterThan(0);
      expect(await listAgents(ws.adminToken)).toHaveLength(1);
    });
  }

  it("400 for a model outside its runtime profile, naming the field", async () => {
    const ws = await signupWorkspace();
    const p = await expectProblem(
      await call("POST", "/v1/agents", {
        token: ws.adminToken,
        body: { slug: "xx", display_name: "X", model: "qwq-32b" },
      }),
      400,
      "invalid_model",
    );
    expect(p.errors).toEqual([{ path: "model", message: expect.stringContaining("standard") }]);
    await expectProblem(
      await call("POST", "/v1/agents", {
        token: ws.adminToken,
        body: { slug: "xx", display_name: "X", runtime_profile: "fast", model: "gpt-oss-120b" },
      }),
      400,
      "invalid_model",
    );
    await expectProblem(
      await call("POST", "/v1/agents", {
        token: ws.adminToken,
        body: { slug: "xx", display_name: "X", model: "gpt-5" },
      }),
      400,
      "invalid_model",
    );
    expect(
      (
        await createAgent(ws.adminToken, {
          slug: "xx",
          display_name: "X",
          runtime_profile: "fast",
          model: "llama-3.1-8b",
        })
      ).model,
    ).toBe("llama-3.1-8b");
  });

  it("400 for malformed JSON and for a non-JSON body", async () => {
    const ws = await signupWorkspace();
    await expectProblem(
      await call("POST", "/v1/agents", {
        token: ws.adminToken,
        rawBody: "{",
        headers: { "Content-Type": "application/json" },
      }),
      400,
    );
    await expectProblem(
      await call("POST", "/v1/agents", {
        token: ws.adminToken,
        rawBody: "slug=x",
        headers: { "Content-Type": "text/plain" },
      }),
      400,
    );
  });
});

// spec: "Lowercase handle, 2-32 characters (letters, digits, hyphens)." — a hyphen anywhere, edges included
describe("handle rules for slug and aliases", () => {
  const VALID = ["ab", "a1", "42", "sales-bot", "a-b-c", "x".repeat(32), "bot-2", "-sales", "sales-", "-x-", "a--b"];
  const INVALID = [
    "a",
    "-",
    "x".repeat(33),
    `-${"x".repeat(32)}`,
    "",
    "Sales",
    "sales_bot",
    "sales bot",
    "salés",
    "ab!",
    "a.b",
  ];
  const RESERVED = ["admin", "system", "all", "everyone", "here", "channel", "help", "api"];
  let ws: Awaited<ReturnType<typeof signupWorkspace>>;
  beforeAll(async () => {
    ws = await signupWorkspace();
  });

  for (const h of VALID) {
    it(`accepts "${h}" as a slug and as an alias`, async () => {
      const a = await createAgent(ws.adminToken, { slug: h, display_name: "Valid" });
      expect(a.slug).toBe(h);
      await patch(ws.adminToken, a.id, { slug: `z${unique()}` });
      const b = await createAgent(ws.adminToken, {
        slug: `y${unique()}`,
        display_name: "Valid",
        aliases: [],
      });
      // the first agent still holds h as an alias after its rename, so release it first
      await patch(ws.adminToken, a.id, { aliases: [] });
      const res = await patch(ws.adminToken, b.id, { aliases: [h] });
      expect(res.status).toBe(200);
      expect((await parse(res, AgentRowSchema)).aliases).toEqual([h]);
    });
  }

  for (const h of INVALID) {
    it(`refuses "${h}" as a slug (invalid_slug) and as an alias (invalid_alias)`, async () => {
      const s = await expectProblem(
        await call("POST", "/v1/agents", { token: ws.adminToken, body: { slug: h, display_name: "Bad" } }),
        400,
        "invalid_slug",
      );
      expect(s.errors?.[0]?.path).toBe("slug");
      const a = await expectProblem(
        await call("POST", "/v1/agents", {
          token: ws.adminToken,
          body: { slug: "fine-slug", display_name: "Bad", aliases: ["ok-alias", h] },
        }),
        400,
        "invalid_alias",
      );
      expect(a.errors?.[0]?.path).toBe("aliases.1");
    });
  }

  for (const h of RESERVED) {
    it(`refuses the reserved word "${h}" as slug, alias and rename`, async () => {
      const s = await expectProblem(
        await call("POST", "/v1/agents", { token: ws.adminToken, body: { slug: h, display_name: "Reserved" } }),
        400,
        "invalid_slug",
      );
      expect(s.detail).toContain("reserved");
      await expectProblem(
        await call("POST", "/v1/agents", {
          token: ws.adminToken,
          body: { slug: "fine-slug", display_name: "R", aliases: [h] },
        }),
        400,
        "invalid_alias",
      );
      const [assistant] = await listAgents(ws.adminToken);
      await expectProblem(await patch(ws.adminToken, assistant!.id, { slug: h }), 400, "invalid_slug");
      await expectProblem(await patch(ws.adminToken, assistant!.id, { aliases: [h] }), 400, "invalid_alias");
    });
  }

  it("refuses collisions between slugs and aliases, both ways, on create and on update", async () => {
    const w = await signupWorkspace();
    const a = await createAgent(w.adminToken, { slug: "alpha", display_name: "A", aliases: ["first"] });
    const b = await createAgent(w.adminToken, { slug: "beta", display_name: "B" });
    // new slug = existing alias; new alias = existing slug; same for slug-slug and alias-alias
    const cases: [string, unknown, string][] = [
      ["POST", { slug: "first", display_name: "X" }, "slug"],
      ["POST", { slug: "gamma", display_name: "X", aliases: ["alpha"] }, "aliases.0"],
      ["POST", { slug: "alpha", display_name: "X" }, "slug"],
      ["POST", { slug: "gamma", display_name: "X", aliases: ["first"] }, "aliases.0"],
      ["PATCH", { slug: "first" }, "slug"],
      ["PATCH", { slug: "alpha" }, "slug"],
      ["PATCH", { aliases: ["ok", "alpha"] }, "aliases.1"],
      ["PATCH", { aliases: ["first"] }, "aliases.0"],
    ];
    for (const [method, body, path] of cases) {
      const res =
        method === "POST"
          ? await call("POST", "/v1/agents", { token: w.adminToken, body })
          : await patch(w.adminToken, b.id, body);
      const p = await expectProblem(res, 400, "handle_taken");
      expect(p.errors?.[0]?.path, JSON.stringify(body)).toBe(path);
    }
    expect(await handlesOf(a.id)).toEqual(["alpha", "first"]);
    expect(await handlesOf(b.id)).toEqual(["beta"]);
    expect((await getAgent(w.adminToken, b.id)).aliases).toEqual([]);
    expect((await listAgents(w.adminToken)).map((x) => x.slug)).toEqual(["assistant", "alpha", "beta"]);
  });

  it("refuses an alias that repeats the slug or another alias of the same request", async () => {
    const w = await signupWorkspace();
    await expectProblem(
      await call("POST", "/v1/agents", {
        token: w.adminToken,
        body: { slug: "dup", display_name: "D", aliases: ["dup"] },
      }),
      400,
      "handle_taken",
    );
    await expectProblem(
      await call("POST", "/v1/agents", {
        token: w.adminToken,
        body: { slug: "dup", display_name: "D", aliases: ["x1", "x1"] },
      }),
      400,
      "handle_taken",
    );
  });

  it("renaming keeps the old slug as an alias, holding it until the alias is dropped; renaming back swaps them", async () => {
    const w = await signupWorkspace();
    const a = await createAgent(w.adminToken, { slug: "sales", display_name: "Sales" });
    const renamed = await parse(await patch(w.adminToken, a.id, { slug: "revenue" }), AgentRowSchema);
    expect(renamed).toMatchObject({ slug: "revenue", aliases: ["sales"] });
    expect(await handlesOf(a.id)).toEqual(["revenue", "sales"]);
    await expectProblem(
      await call("POST", "/v1/agents", { token: w.adminToken, body: { slug: "sales", display_name: "Other" } }),
      400,
      "handle_taken",
    );

    // renaming back to its own alias swaps slug and alias
    const back = await parse(await patch(w.adminToken, a.id, { slug: "sales" }), AgentRowSchema);
    expect(back).toMatchObject({ slug: "sales", aliases: ["revenue"] });
    expect(await handlesOf(a.id)).toEqual(["revenue", "sales"]);

    // dropping the alias frees the handle for another agent
    expect((await parse(await patch(w.adminToken, a.id, { aliases: [] }), AgentRowSchema)).aliases).toEqual([]);
    expect(await handlesOf(a.id)).toEqual(["sales"]);
    const b = await createAgent(w.adminToken, { slug: "revenue", display_name: "Revenue" });
    expect(await handlesOf(b.id)).toEqual(["revenue"]);

    // a rename that sends aliases keeps the old slug on top of them
    const again = await parse(
      await patch(w.adminToken, a.id, { slug: "deals", aliases: ["pipeline"] }),
      AgentRowSchema,
    );
    expect(again.aliases).toEqual(["pipeline", "sales"]);
    expect(await handlesOf(a.id)).toEqual(["deals", "pipeline", "sales"]);
    const [event] = await auditEvents(w.workspace.id, "agent.update");
    expect(event!.details).toEqual({ fields: ["slug", "aliases"], slug: "deals", previous_slug: "sales" });
  });

  it("a rename that would push the aliases past 10 is refused", async () => {
    const w = await signupWorkspace();
    const aliases = Array.from({ length: 10 }, (_, i) => `al${i}`);
    const a = await createAgent(w.adminToken, { slug: "many", display_name: "Many", aliases });
    await expectProblem(await patch(w.adminToken, a.id, { slug: "many2" }), 400, "invalid_alias");
    expect((await getAgent(w.adminToken, a.id)).slug).toBe("many");
  });

  it("under concurrent creates with one slug, the database lets exactly one through", async () => {
    const w = await signupWorkspace();
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        call("POST", "/v1/agents", { token: w.adminToken, body: { slug: "race", display_name: `R${i}` } }),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 400, 400, 400, 400, 400]);
    for (const r of results.filter((x) => x.status === 400)) await expectProblem(r, 400, "handle_taken");
    const { results: rows } = await env.DB.prepare(
      "SELECT count(*) AS n FROM agents a JOIN workspaces w ON w.id = a.workspace_id WHERE a.slug = 'race' AND w.id = ?",
    )
      .bind(w.workspace.id)
      .all<{ n: number }>();
    expect(rows[0]!.n).toBe(1);
  });

  it("under concurrent renames onto one handle, exactly one agent gets it", async () => {
    const w = await signupWorkspace();
    const agents = await Promise.all(
      [1, 2, 3, 4].map((i) => createAgent(w.adminToken, { slug: `r${i}x`, display_name: `R${i}` })),
    );
    const results = await Promise.all(agents.map((a) => patch(w.adminToken, a.id, { aliases: ["shared"] })));
    expect(results.map((r) => r.status).sort()).toEqual([200, 400, 400, 400]);
    const { results: rows } = await env.DB.prepare(
      "SELECT agent_id FROM agent_handles WHERE workspace_id = ? AND handle = 'shared'",
    )
      .bind(w.workspace.id)
      .all();
    expect(rows).toHaveLength(1);
    const holders = (await listAgents(w.adminToken)).filter((a) => a.aliases.includes("shared"));
    expect(holders).toHaveLength(1);
  });
});

describe("PATCH /v1/agents/{id}", () => {
  it("changes only the fields sent", async () => {
    const ws = await signupWorkspace();
    const a = await createAgent(ws.adminToken, {
      slug: "keep",
      display_name: "Keep",
      description: "d",
      tone: "formal",
      verbosity: "detailed",
      cautions: ["x"],
      languages: ["en"],
      aliases: ["kept"],
    });
    const res = await patch(ws.adminToken, a.id, { display_name: "Kept Name" });
    const after = await parse(res, AgentRowSchema);
    expect(after).toEqual({ ...a, display_name: "Kept Name" });
    const [event] = await auditEvents(ws.workspace.id, "agent.update");
    expect(event).toMatchObject({ target: `agent:${a.id}`, intent: "update", agent_id: a.id });
    expect(event!.details).toEqual({ fields: ["display_name"], slug: "keep" });
  });

  it("an explicit null clears each nullable field", async () => {
    const ws = await signupWorkspace();
    const a = await createAgent(ws.adminToken, {
      slug: "clear-me",
      display_name: "C",
      description: "d",
      instructions: "i",
      tone: "direct",
      verbosity: "concise",
      runtime_profile: "fast",
      model: "llama-3.1-8b",
      avatar_url: "https://cdn.example.com/x.png",
    });
    const after = await parse(
      await patch(ws.adminToken, a.id, {
        description: null,
        instructions: null,
        tone: null,
        verbosity: null,
        model: null,
        avatar_url: null,
      }),
      AgentRowSchema,
    );
    expect(after).toMatchObject({
      description: null,
      instructions: null,
      tone: null,
      verbosity: null,
      model: null,
      avatar_url: null,
      runtime_profile: "fast",
    });
    expect(after.instructions_is_default).toBe(false);
  });

  it("null on a field that is not nullable is a 400", async () => {
    const ws = await signupWorkspace();
    const [assistant] = await listAgents(ws.adminToken);
    for (const field of ["slug", "display_name", "aliases", "cautions", "languages", "runtime_profile"]) {
      await expectProblem(await patch(ws.adminToken, assistant!.id, { [field]: null }), 400, "validation_failed");
    }
    expect(await getAgent(ws.adminToken, assistant!.id)).toEqual(assistant);
  });

  it("writing instructions makes instructions_is_default false on the seeded default agent", async () => {
    const ws = await signupWorkspace();
    const [assistant] = await listAgents(ws.adminToken);
    expect(assistant).toMatchObject({
      instructions: DEFAULT_AGENT_INSTRUCTIONS,
      instructions_is_default: true,
      is_default: true,
    });
    // other fields leave the flag alone
    expect(
      (await parse(await patch(ws.adminToken, assistant!.id, { tone: "casual" }), AgentRowSchema))
        .instructions_is_default,
    ).toBe(true);
    // even writing the seeded text back counts as the admin's own
    const after = await parse(
      await patch(ws.adminToken, assistant!.id, { instructions: DEFAULT_AGENT_INSTRUCTIONS }),
      AgentRowSchema,
    );
    expect(after).toMatchObject({ instructions: DEFAULT_AGENT_INSTRUCTIONS, instructions_is_default: false });
  });

  it("canonicalises languages and keeps their order", async () => {
    const ws = await signupWorkspace();
    const a = await createAgent(ws.adminToken, { slug: "polyglot", display_name: "P" });
    const after = await parse(
      await patch(ws.adminToken, a.id, { languages: ["pt-br", "EN", "zh-hant-tw"] }),
      AgentRowSchema,
    );
    expect(after.languages).toEqual(["pt-BR", "en", "zh-Hant-TW"]);
    const p = await expectProblem(
      await patch(ws.adminToken, a.id, { languages: ["en", "not a tag"] }),
      400,
      "validation_failed",
    );
    expect(p.errors?.[0]?.path).toBe("languages.1");
    expect((await parse(await patch(ws.adminToken, a.id, { languages: [] }), AgentRowSchema)).languages).toEqual([]);
  });

  it("keeps model and runtime profile consistent", async () => {
    const ws = await signupWorkspace();
    const a = await createAgent(ws.adminToken, {
      slug: "thinker",
      display_name: "T",
      runtime_profile: "reasoning",
      model: "qwq-32b",
    });
    // moving to a profile that does not offer the current model needs the model changed too
    await expectProblem(await patch(ws.adminToken, a.id, { runtime_profile: "fast" }), 400, "invalid_model");
    await expectProblem(await patch(ws.adminToken, a.id, { model: "llama-3.1-8b" }), 400, "invalid_model");
    const moved = await parse(
      await patch(ws.adminToken, a.id, { runtime_profile: "fast", model: null }),
      AgentRowSchema,
    );
    expect(moved).toMatchObject({ runtime_profile: "fast", model: null });
    const pinned = await parse(await patch(ws.adminToken, a.id, { model: "llama-3.1-8b" }), AgentRowSchema);
    expect(pinned.model).toBe("llama-3.1-8b");
    await expectProblem(await patch(ws.adminToken, a.id, { runtime_profile: "turbo" }), 400, "validation_failed");
  });

  it("an empty body changes nothing; bad fields are 400 and change nothing", async () => {
    const ws = await signupWorkspace();
    const a = await createAgent(ws.adminToken, { slug: "steady", display_name: "S" });
    expect(await parse(await patch(ws.adminToken, a.id, {}), AgentRowSchema)).toEqual(a);
    for (const body of [
      { tone: "loud" },
      { avatar_url: "ftp://x/y.png" },
      { cautions: ["ok", ""] },
      { slug: "Bad Slug" },
      { unknown: 1 },
      { display_name: 5 },
    ]) {
      const res = await patch(ws.adminToken, a.id, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    expect(await getAgent(ws.adminToken, a.id)).toEqual(a);
  });
});

describe("status and the default flag", () => {
  it("DELETE disables (idempotently), the default agent cannot be disabled, enable restores (idempotently)", async () => {
    const ws = await signupWorkspace();
    const [assistant] = await listAgents(ws.adminToken);
    const a = await createAgent(ws.adminToken, { slug: "temp", display_name: "Temp" });

    const disabled = await parse(await call("DELETE", `/v1/agents/${a.id}`, { token: ws.adminToken }), AgentRowSchema);
    expect(disabled).toMatchObject({ id: a.id, status: "disabled" });
    const again = await call("DELETE", `/v1/agents/${a.id}`, { token: ws.adminToken });
    expect(again.status).toBe(200);
    expect((await parse(again, AgentRowSchema)).status).toBe("disabled");

    await expectProblem(
      await call("DELETE", `/v1/agents/${assistant!.id}`, { token: ws.adminToken }),
      400,
      "default_agent",
    );
    expect((await getAgent(ws.adminToken, assistant!.id)).status).toBe("enabled");

    const enabled = await parse(
      await call("POST", `/v1/agents/${a.id}/enable`, { token: ws.adminToken }),
      AgentRowSchema,
    );
    expect(enabled.status).toBe("enabled");
    const noop = await parse(await call("POST", `/v1/agents/${a.id}/enable`, { token: ws.adminToken }), AgentRowSchema);
    expect(noop).toEqual(enabled);

    const disables = await auditEvents(ws.workspace.id, "agent.disable");
    expect(disables.map((e) => e.details.changed)).toEqual([false, true]);
    const enables = await auditEvents(ws.workspace.id, "agent.enable");
    expect(enables.map((e) => e.details.changed)).toEqual([false, true]);
    expect(enables[0]).toMatchObject({ target: `agent:${a.id}`, intent: "enable" });
  });

  it("POST default moves the flag; a disabled agent cannot take it", async () => {
    const ws = await signupWorkspace();
    const [assistant] = await listAgents(ws.adminToken);
    const a = await createAgent(ws.adminToken, { slug: "next", display_name: "Next" });
    const now = await parse(await call("POST", `/v1/agents/${a.id}/default`, { token: ws.adminToken }), AgentRowSchema);
    expect(now).toMatchObject({ id: a.id, is_default: true });
    expect((await getAgent(ws.adminToken, assistant!.id)).is_default).toBe(false);
    // the old default can now be disabled, and a disabled agent cannot become default
    expect((await call("DELETE", `/v1/agents/${assistant!.id}`, { token: ws.adminToken })).status).toBe(200);
    await expectProblem(
      await call("POST", `/v1/agents/${assistant!.id}/default`, { token: ws.adminToken }),
      400,
      "agent_disabled",
    );
    expect((await getAgent(ws.adminToken, a.id)).is_default).toBe(true);
    // making the default the default again is a no-op
    expect(
      (await parse(await call("POST", `/v1/agents/${a.id}/default`, { token: ws.adminToken }), AgentRowSchema))
        .is_default,
    ).toBe(true);
    const events = await auditEvents(ws.workspace.id, "agent.default");
    expect(events.map((e) => e.details)).toEqual([
      { slug: "next", previous_default_id: a.id },
      { slug: "next", previous_default_id: assistant!.id },
    ]);
  });

  it("exactly one default under concurrent calls", async () => {
    const ws = await signupWorkspace();
    const agents = await Promise.all(
      Array.from({ length: 6 }, (_, i) => createAgent(ws.adminToken, { slug: `c${i}c`, display_name: `C${i}` })),
    );
    for (let round = 0; round < 3; round++) {
      const results = await Promise.all(
        agents.map((a) => call("POST", `/v1/agents/${a.id}/default`, { token: ws.adminToken })),
      );
      expect(results.map((r) => r.status)).toEqual(agents.map(() => 200));
      const { results: rows } = await env.DB.prepare("SELECT id FROM agents WHERE workspace_id = ? AND is_default = 1")
        .bind(ws.workspace.id)
        .all();
      expect(rows).toHaveLength(1);
    }
  });

  it("default and disable racing on one agent never leave a disabled default or no default", async () => {
    const ws = await signupWorkspace();
    for (let i = 0; i < 4; i++) {
      const a = await createAgent(ws.adminToken, { slug: `race${i}`, display_name: "R" });
      await Promise.all([
        call("POST", `/v1/agents/${a.id}/default`, { token: ws.adminToken }),
        call("DELETE", `/v1/agents/${a.id}`, { token: ws.adminToken }),
      ]);
      const { results } = await env.DB.prepare("SELECT status FROM agents WHERE workspace_id = ? AND is_default = 1")
        .bind(ws.workspace.id)
        .all<{ status: string }>();
      expect(results).toEqual([{ status: "enabled" }]);
    }
  });

  it("lists the default first, then enabled agents, then disabled ones, each by slug", async () => {
    const ws = await signupWorkspace();
    const zeta = await createAgent(ws.adminToken, { slug: "zeta", display_name: "Z" });
    const alpha = await createAgent(ws.adminToken, { slug: "alpha", display_name: "A" });
    await createAgent(ws.adminToken, { slug: "mid", display_name: "M" });
    const beta = await createAgent(ws.adminToken, { slug: "beta", display_name: "B" });
    await call("DELETE", `/v1/agents/${alpha.id}`, { token: ws.adminToken });
    await call("DELETE", `/v1/agents/${beta.id}`, { token: ws.adminToken });
    expect((await listAgents(ws.adminToken)).map((a) => a.slug)).toEqual(["assistant", "mid", "zeta", "alpha", "beta"]);
    await call("POST", `/v1/agents/${zeta.id}/default`, { token: ws.adminToken });
    expect((await listAgents(ws.adminToken)).map((a) => a.slug)).toEqual(["zeta", "assistant", "mid", "alpha", "beta"]);
  });
});

describe("the OpenAPI document", () => {
  it("describes every agents route with its scope", async () => {
    const doc = (await (await call("GET", "/v1/openapi.json")).json()) as {
      paths: Record<
        string,
        Record<string, { security?: unknown; requestBody?: unknown; responses: Record<string, unknown> }>
      >;
      components: { schemas: Record<string, unknown> };
    };
    const read = [{ bearer: ["agents:read"] }];
    const admin = [{ bearer: ["admin"] }];
    const expected: [string, string, unknown][] = [
      ["/v1/agents", "get", read],
      ["/v1/agents", "post", admin],
      ["/v1/agents/{id}", "get", read],
      ["/v1/agents/{id}", "patch", admin],
      ["/v1/agents/{id}", "delete", admin],
      ["/v1/agents/{id}/enable", "post", admin],
      ["/v1/agents/{id}/default", "post", admin],
      ["/v1/agents/{id}/avatar", "post", admin],
      ["/v1/agents/{id}/avatar/generate", "post", admin],
      ["/v1/agents/{id}/skills", "get", read],
      ["/v1/agents/{id}/skills", "put", admin],
      ["/v1/agents/{id}/mcp", "get", read],
      ["/v1/agents/{id}/mcp", "put", admin],
      ["/v1/agents/{id}/suggest-instructions", "post", admin],
      ["/v1/avatars/{workspace_id}/{hash}", "get", []],
      ["/v1/api/skills", "get", read],
      ["/v1/api/skills/{slug}", "put", admin],
      ["/v1/api/skills/{slug}", "delete", admin],
      ["/v1/api/mcp/servers", "get", read],
      ["/v1/api/mcp/servers/{slug}", "put", admin],
      ["/v1/api/mcp/servers/{slug}", "delete", admin],
    ];
    for (const [path, method, security] of expected) {
      const op = doc.paths[path]?.[method];
      expect(op, `${method} ${path}`).toBeDefined();
      expect(op!.security, `${method} ${path}`).toEqual(security);
      expect(op!.responses["200"], `${method} ${path}`).toBeDefined();
    }
    expect(doc.paths["/v1/agents/{id}"]!.patch!.responses["404"]).toBeDefined();
    expect(doc.paths["/v1/agents/{id}/suggest-instructions"]!.post!.responses["500"]).toBeDefined();
    expect(doc.paths["/v1/agents/{id}/avatar/generate"]!.post!.responses["500"]).toBeDefined();
    for (const name of [
      "AgentRow",
      "CreateAgentRequest",
      "UpdateAgentRequest",
      "AvatarUploadRequest",
      "AgentSkills",
      "AgentMcpServers",
      "Skill",
      "McpServer",
    ]) {
      expect(doc.components.schemas[name], name).toBeDefined();
    }
  });
});
