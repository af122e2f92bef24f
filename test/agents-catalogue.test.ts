import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import {
  AgentListSchema,
  AgentMcpServersSchema,
  AgentSkillsSchema,
  McpServerCatalogueSchema,
  McpServerEntrySchema,
  SkillCatalogueSchema,
  SkillEntrySchema,
} from "../src/agents/schemas";
import { createAgent, getAgent } from "./support/agents";
import { call, expectProblem, parse } from "./support/api";
import { auditEvents } from "./support/audit";
import { addUser, signupWorkspace } from "./support/seed";

const SKILLS = ["code-interpreter", "deep-research", "document-reader", "image-generation", "web-reader", "web-search"];
const MCP_SERVERS = ["atlassian", "github", "linear", "notion", "sentry", "stripe"];

/** The two catalogues differ only in paths, wrapper names and audit kinds; one table drives both. */
const KINDS = [
  {
    name: "skills",
    catalogue: "/v1/api/skills",
    agentPath: "skills",
    key: "skills" as const,
    all: SKILLS,
    a: "web-search",
    b: "code-interpreter",
    listSchema: SkillCatalogueSchema,
    entrySchema: SkillEntrySchema,
    subsetSchema: AgentSkillsSchema,
    notInstalled: "skill_not_installed",
    audit: { install: "skill.install", uninstall: "skill.uninstall", subset: "agent.skills" },
    target: "skill",
    removed: { reason: "only_skill_removed", detail: "skill" },
  },
  {
    name: "MCP servers",
    catalogue: "/v1/api/mcp/servers",
    agentPath: "mcp",
    key: "mcp_servers" as const,
    all: MCP_SERVERS,
    a: "github",
    b: "linear",
    listSchema: McpServerCatalogueSchema,
    entrySchema: McpServerEntrySchema,
    subsetSchema: AgentMcpServersSchema,
    notInstalled: "mcp_server_not_installed",
    audit: { install: "mcp.install", uninstall: "mcp.uninstall", subset: "agent.mcp" },
    target: "mcp_server",
    removed: { reason: "only_mcp_server_removed", detail: "mcp_server" },
  },
];

for (const k of KINDS) {
  describe(`${k.name}: the catalogue`, () => {
    let ws: Awaited<ReturnType<typeof signupWorkspace>>;
    let member: string;
    let noRead: string;
    beforeAll(async () => {
      ws = await signupWorkspace();
      member = (await addUser(ws.adminToken, "member", ["agents:read"])).token;
      noRead = (await addUser(ws.adminToken, "member", ["conversations:read"])).token;
    });

    const list = async (token: string) => {
      const res = await call("GET", k.catalogue, { token });
      expect(res.status).toBe(200);
      return (await parse(res, k.listSchema as typeof SkillCatalogueSchema))[k.key as "skills"];
    };

    it("lists the seeded platform catalogue by slug, nothing installed in a new workspace", async () => {
      const entries = await list(member);
      expect(entries.map((e) => e.slug)).toEqual(k.all);
      expect(entries.every((e) => !e.installed && e.name && e.description)).toBe(true);
    });

    it("installs an entry (admin only, idempotent, audited) without touching other workspaces", async () => {
      const res = await call("PUT", `${k.catalogue}/${k.a}`, { token: ws.adminToken });
      expect(res.status).toBe(200);
      expect(await parse(res, k.entrySchema as typeof SkillEntrySchema)).toMatchObject({ slug: k.a, installed: true });
      expect((await call("PUT", `${k.catalogue}/${k.a}`, { token: ws.adminToken })).status).toBe(200);
      const entries = await list(ws.adminToken);
      expect(entries.filter((e) => e.installed).map((e) => e.slug)).toEqual([k.a]);
      const other = await signupWorkspace();
      expect((await list(other.adminToken)).some((e) => e.installed)).toBe(false);
      const events = await auditEvents(ws.workspace.id, k.audit.install);
      expect(events.map((e) => [e.target, e.intent, e.details])).toEqual([
        [`${k.target}:${k.a}`, "install", { slug: k.a, changed: false }],
        [`${k.target}:${k.a}`, "install", { slug: k.a, changed: true }],
      ]);
    });

    it("refuses members, tokens without the scope, anonymous callers and unknown slugs", async () => {
      await expectProblem(await call("PUT", `${k.catalogue}/${k.b}`, { token: member }), 403, "admin_required");
      await expectProblem(await call("DELETE", `${k.catalogue}/${k.a}`, { token: member }), 403, "admin_required");
      await expectProblem(await call("GET", k.catalogue, { token: noRead }), 403, "insufficient_scope");
      await expectProblem(await call("GET", k.catalogue), 401);
      await expectProblem(await call("PUT", `${k.catalogue}/${k.b}`), 401);
      await expectProblem(
        await call("PUT", `${k.catalogue}/no-such-entry`, { token: ws.adminToken }),
        404,
        "not_found",
      );
      await expectProblem(
        await call("DELETE", `${k.catalogue}/no-such-entry`, { token: ws.adminToken }),
        404,
        "not_found",
      );
      expect((await list(ws.adminToken)).find((e) => e.slug === k.b)?.installed).toBe(false);
    });

    it("uninstalling removes the slug from every agent's subset of this workspace only", async () => {
      const w = await signupWorkspace();
      const other = await signupWorkspace();
      for (const t of [w.adminToken, other.adminToken]) {
        for (const s of [k.a, k.b]) expect((await call("PUT", `${k.catalogue}/${s}`, { token: t })).status).toBe(200);
      }
      const both = await createAgent(w.adminToken, { slug: "both", display_name: "Both", [k.key]: [k.a, k.b] });
      const only = await createAgent(w.adminToken, { slug: "only", display_name: "Only", [k.key]: [k.a] });
      const other2 = await createAgent(w.adminToken, { slug: "other-only", display_name: "Other", [k.key]: [k.b] });
      const foreign = await createAgent(other.adminToken, { slug: "foreign", display_name: "F", [k.key]: [k.a] });

      const res = await call("DELETE", `${k.catalogue}/${k.a}`, { token: w.adminToken });
      expect(res.status).toBe(200);
      expect(await parse(res, k.entrySchema as typeof SkillEntrySchema)).toMatchObject({ slug: k.a, installed: false });

      const subset = async (token: string, id: string) =>
        (await (await call("GET", `/v1/agents/${id}/${k.agentPath}`, { token })).json()) as Record<string, string[]>;
      // An agent that had others simply loses this one, and stays enabled.
      expect(await subset(w.adminToken, both.id)).toEqual({ [k.key]: [k.b] });
      expect((await getAgent(w.adminToken, both.id)).status).toBe("enabled");
      // Its only one: "An empty list means that the agent uses all skills, or all MCP servers, installed for
      // the workspace", so it would be widened to everything; it is disabled instead.
      expect(await subset(w.adminToken, only.id)).toEqual({ [k.key]: [] });
      expect((await getAgent(w.adminToken, only.id)).status).toBe("disabled");
      expect(await subset(w.adminToken, other2.id)).toEqual({ [k.key]: [k.b] });
      expect(await subset(other.adminToken, foreign.id)).toEqual({ [k.key]: [k.a] });
      expect((await getAgent(other.adminToken, foreign.id)).status).toBe("enabled");
      const disabled = await auditEvents(w.workspace.id, "agent.disable");
      expect(disabled.map((e) => [e.target, e.agent_id, e.intent, e.actor_id, e.details])).toEqual([
        [
          `agent:${only.id}`,
          only.id,
          "disable",
          w.user.id,
          { slug: "only", changed: true, reason: k.removed.reason, [k.removed.detail]: k.a },
        ],
      ]);
      expect(await auditEvents(w.workspace.id, "agent.subset_widened")).toEqual([]);

      const again = await call("DELETE", `${k.catalogue}/${k.a}`, { token: w.adminToken });
      expect(again.status).toBe(200);
      const events = await auditEvents(w.workspace.id, k.audit.uninstall);
      expect(events.map((e) => e.details)).toEqual([
        { slug: k.a, changed: false, agents_updated: 0 },
        { slug: k.a, changed: true, agents_updated: 2 },
      ]);
      const { results } = await env.DB.prepare(`SELECT slug FROM workspace_${k.key} WHERE workspace_id = ?`)
        .bind(w.workspace.id)
        .all<{ slug: string }>();
      expect(results.map((r) => r.slug)).toEqual([k.b]);
    });

    it("the default agent, which cannot be disabled, widens to every installed entry, with an agent.subset_widened event", async () => {
      const w = await signupWorkspace();
      for (const s of [k.a, k.b])
        expect((await call("PUT", `${k.catalogue}/${s}`, { token: w.adminToken })).status).toBe(200);
      const { agents } = await parse(await call("GET", "/v1/agents", { token: w.adminToken }), AgentListSchema);
      const assistant = agents.find((a) => a.is_default)!;
      const put = await call("PUT", `/v1/agents/${assistant.id}/${k.agentPath}`, {
        token: w.adminToken,
        body: { [k.key]: [k.a] },
      });
      expect(put.status).toBe(200);
      expect((await call("DELETE", `${k.catalogue}/${k.a}`, { token: w.adminToken })).status).toBe(200);
      const after = await getAgent(w.adminToken, assistant.id);
      expect(after).toMatchObject({ status: "enabled", is_default: true });
      expect(
        await (await call("GET", `/v1/agents/${assistant.id}/${k.agentPath}`, { token: w.adminToken })).json(),
      ).toEqual({ [k.key]: [] });
      const widened = await auditEvents(w.workspace.id, "agent.subset_widened");
      expect(widened.map((e) => [e.target, e.agent_id, e.intent, e.details])).toEqual([
        [
          `agent:${assistant.id}`,
          assistant.id,
          "widen",
          { slug: assistant.slug, reason: k.removed.reason, [k.removed.detail]: k.a },
        ],
      ]);
      expect(await auditEvents(w.workspace.id, "agent.disable")).toEqual([]);
    });

    it("disables the agent in the uninstall's own batch: when its event cannot be written, nothing changes", async () => {
      const w = await signupWorkspace();
      for (const s of [k.a, k.b])
        expect((await call("PUT", `${k.catalogue}/${s}`, { token: w.adminToken })).status).toBe(200);
      const only = await createAgent(w.adminToken, { slug: "only", display_name: "Only", [k.key]: [k.a] });
      await env.DB.prepare(
        `CREATE TRIGGER fail_disable_event BEFORE INSERT ON audit_outbox
         WHEN NEW.workspace_id = '${w.workspace.id}' AND NEW.event LIKE '%"agent.disable"%'
         BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
      ).run();
      try {
        const res = await call("DELETE", `${k.catalogue}/${k.a}`, { token: w.adminToken });
        expect(res.status).toBe(500);
      } finally {
        await env.DB.prepare("DROP TRIGGER fail_disable_event").run();
      }
      expect(await getAgent(w.adminToken, only.id)).toMatchObject({ status: "enabled" });
      expect(await (await call("GET", `/v1/agents/${only.id}/${k.agentPath}`, { token: w.adminToken })).json()).toEqual(
        {
          [k.key]: [k.a],
        },
      );
      const installed = (await list(w.adminToken)).filter((e) => e.installed).map((e) => e.slug);
      expect(installed).toContain(k.a);
      expect(await auditEvents(w.workspace.id, k.audit.uninstall)).toEqual([]);
    });
  });

  describe(`${k.name}: an agent's subset`, () => {
    let ws: Awaited<ReturnType<typeof signupWorkspace>>;
    let agentId: string;
    beforeAll(async () => {
      ws = await signupWorkspace();
      for (const s of [k.a, k.b]) await call("PUT", `${k.catalogue}/${s}`, { token: ws.adminToken });
      agentId = (await createAgent(ws.adminToken, { slug: "subset", display_name: "Subset" })).id;
    });
    const path = () => `/v1/agents/${agentId}/${k.agentPath}`;

    it("starts empty (all installed), is replaced by PUT, reset by an empty list, and audited", async () => {
      expect(
        await parse(await call("GET", path(), { token: ws.adminToken }), k.subsetSchema as typeof AgentSkillsSchema),
      ).toEqual({ [k.key]: [] });
      const put = await call("PUT", path(), { token: ws.adminToken, body: { [k.key]: [k.b, k.a, k.b] } });
      expect(put.status).toBe(200);
      expect(await put.json()).toEqual({ [k.key]: [k.b, k.a] });
      expect(await (await call("GET", path(), { token: ws.adminToken })).json()).toEqual({ [k.key]: [k.b, k.a] });
      const reset = await call("PUT", path(), { token: ws.adminToken, body: { [k.key]: [] } });
      expect(await reset.json()).toEqual({ [k.key]: [] });
      const events = await auditEvents(ws.workspace.id, k.audit.subset);
      expect(events.map((e) => [e.target, e.agent_id, e.details])).toEqual([
        [`agent:${agentId}`, agentId, { [k.key]: [], [`previous_${k.key}`]: [k.b, k.a] }],
        [`agent:${agentId}`, agentId, { [k.key]: [k.b, k.a], [`previous_${k.key}`]: [] }],
      ]);
    });

    it("refuses slugs that are not installed, naming each, and keeps the old subset", async () => {
      await call("PUT", path(), { token: ws.adminToken, body: { [k.key]: [k.a] } });
      const notInstalled = k.all.find((s) => s !== k.a && s !== k.b)!;
      const p = await expectProblem(
        await call("PUT", path(), { token: ws.adminToken, body: { [k.key]: [k.a, notInstalled, "made-up"] } }),
        400,
        k.notInstalled,
      );
      expect(p.errors?.map((e) => e.path)).toEqual([`${k.key}.1`, `${k.key}.2`]);
      expect(await (await call("GET", path(), { token: ws.adminToken })).json()).toEqual({ [k.key]: [k.a] });
    });

    it("checks a list of the full 100 slugs (beyond D1's 100 bound variables) on PUT and on create, naming each missing one", async () => {
      const full = [k.a, k.b, ...Array.from({ length: 98 }, (_, i) => `missing-${i}`)];
      const put = await expectProblem(
        await call("PUT", path(), { token: ws.adminToken, body: { [k.key]: full } }),
        400,
        k.notInstalled,
      );
      expect(put.errors?.map((e) => e.path)).toEqual(full.slice(2).map((_, i) => `${k.key}.${i + 2}`));
      const create = await expectProblem(
        await call("POST", "/v1/agents", {
          token: ws.adminToken,
          body: { slug: "full-list", display_name: "Full", [k.key]: full },
        }),
        400,
        k.notInstalled,
      );
      expect(create.errors).toHaveLength(98);
      const installedOnly = await call("PUT", path(), { token: ws.adminToken, body: { [k.key]: [k.a, k.b] } });
      expect(await installedOnly.json()).toEqual({ [k.key]: [k.a, k.b] });
    });

    it("refuses malformed bodies", async () => {
      for (const body of [
        {},
        { [k.key]: k.a },
        { [k.key]: [1] },
        { [k.key]: [""] },
        { [k.key]: null },
        { [k.key]: Array.from({ length: 101 }, (_, i) => `s${i}`) },
      ]) {
        await expectProblem(await call("PUT", path(), { token: ws.adminToken, body }), 400, "validation_failed");
      }
      await expectProblem(
        await call("PUT", path(), {
          token: ws.adminToken,
          rawBody: "[",
          headers: { "Content-Type": "application/json" },
        }),
        400,
      );
    });
  });
}
