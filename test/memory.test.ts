import { env } from "cloudflare:workers";
import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { beforeAll, describe, expect, it } from "vitest";
import { ErasureSummarySchema } from "../src/admin/erase-schemas";
import { AgentListSchema } from "../src/agents/schemas";
import { memoryArea } from "../src/memory";
import { type Fact, FactListSchema, FreezeListSchema, FreezeSchema, UnfreezeSchema } from "../src/memory/schemas";
import { ASKING_AGENT, type AskingAgentState, FACTS_PER_USER, rankFacts, tokenize } from "../src/memory/service";
import { MEMORY_INSTRUCTIONS, RECALL_LIMIT } from "../src/memory/tools";
import { newId } from "../src/platform/ids";
import type { TurnScope } from "../src/platform/turn-tools";
import { createAgent } from "./support/agents";
import { call, expectProblem, parse } from "./support/api";
import { auditEvents } from "./support/audit";
import { countingD1 } from "./support/d1-count";
import { addUser, issueToken, signupWorkspace } from "./support/seed";
import { unique } from "./support/unique";

type Ws = Awaited<ReturnType<typeof signupWorkspace>>;
type AgentRef = { id: string; slug: string };

const UNKNOWN_ID = "0190f5e2-7c1a-7000-8000-000000000000";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function defaultAgent(token: string): Promise<AgentRef> {
  const { agents } = await parse(await call("GET", "/v1/agents", { token }), AgentListSchema);
  return agents.find((a) => a.is_default)!;
}

function scopeOf(workspaceId: string, userId: string, agent: AgentRef): TurnScope {
  return {
    env,
    workspaceId,
    userId,
    agent: { id: agent.id, slug: agent.slug, skills: [], mcpServers: [] },
    conversationId: null,
    turnId: newId(),
    origin: "https://svc.test",
    artifactIds: [],
    signal: new AbortController().signal,
  };
}

const toolsFor = (workspaceId: string, userId: string, agent: AgentRef) =>
  memoryArea.tools!(scopeOf(workspaceId, userId, agent));

const run = { toolCallId: "call-1", messages: [], context: {} };

type RememberResult = { remembered: boolean; id?: string; error?: string };
type RecallResult = { facts: { content: string; created_at: string }[]; error?: string };

/** Calls a tool's execute as the AI SDK would. */
async function exec<T>(tools: Awaited<ReturnType<typeof toolsFor>>["tools"], name: string, input: unknown) {
  const t = tools[name];
  if (!t?.execute) throw new Error(`no tool ${name}`);
  return (await t.execute(input as never, run as never)) as T;
}

/** Stores facts about a user through the agent's `remember` tool. */
async function remember(workspaceId: string, userId: string, agent: AgentRef, ...contents: string[]) {
  const { tools } = await toolsFor(workspaceId, userId, agent);
  const ids: string[] = [];
  for (const content of contents) {
    const r = await exec<RememberResult>(tools, "remember", { content });
    expect(r.remembered).toBe(true);
    ids.push(r.id!);
  }
  return ids;
}

const facts = async (token: string) =>
  (await parse(await call("GET", "/v1/memory/facts", { token }), FactListSchema)).facts;
const freezes = async (token: string) =>
  (await parse(await call("GET", "/v1/memory/freeze", { token }), FreezeListSchema)).freezes;
const freeze = (token: string, slug: string, body: unknown = {}) =>
  call("PUT", `/v1/memory/freeze/${encodeURIComponent(slug)}`, { token, body });
const unfreeze = (token: string, slug: string) =>
  call("DELETE", `/v1/memory/freeze/${encodeURIComponent(slug)}`, { token });

async function countRows(table: "memory_facts" | "memory_freezes", userId: string): Promise<number> {
  const row = await env.DB.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE user_id = ?`)
    .bind(userId)
    .first<{ n: number }>();
  return row!.n;
}

describe("who may call the memory routes", () => {
  let ws: Ws;
  let readOnly: string;
  let writeOnly: string;
  let none: string;
  let assistant: AgentRef;

  beforeAll(async () => {
    ws = await signupWorkspace();
    assistant = await defaultAgent(ws.adminToken);
    readOnly = await issueToken(ws.adminToken, ws.user.id, ["memory:read"]);
    writeOnly = await issueToken(ws.adminToken, ws.user.id, ["memory:write"]);
    none = await issueToken(ws.adminToken, ws.user.id, ["agents:read"]);
  });

  const ROUTES = [
    { method: "GET", path: () => "/v1/memory/facts", scope: "memory:read" },
    { method: "DELETE", path: () => `/v1/memory/facts/${UNKNOWN_ID}`, scope: "memory:write" },
    { method: "GET", path: () => "/v1/memory/freeze", scope: "memory:read" },
    { method: "PUT", path: () => "/v1/memory/freeze/assistant", scope: "memory:write", body: {} },
    { method: "DELETE", path: () => "/v1/memory/freeze/assistant", scope: "memory:write" },
  ];

  for (const r of ROUTES) {
    it(`${r.method} ${r.path()}: no or a bad credential is 401, a token without ${r.scope} is 403`, async () => {
      await expectProblem(await call(r.method, r.path(), { body: r.body }), 401);
      await expectProblem(await call(r.method, r.path(), { token: "svc_pat_nonsense", body: r.body }), 401);
      await expectProblem(await call(r.method, r.path(), { token: none, body: r.body }), 403);
      const wrong = r.scope === "memory:read" ? writeOnly : readOnly;
      await expectProblem(await call(r.method, r.path(), { token: wrong, body: r.body }), 403);
      const right = r.scope === "memory:read" ? readOnly : writeOnly;
      const res = await call(r.method, r.path(), { token: right, body: r.body });
      // the unknown fact id is a 404; every other route succeeds
      expect(res.status).toBe(r.method === "DELETE" && r.path().includes("facts") ? 404 : 200);
    });
  }

  it("reads the caller's facts with memory:read only", async () => {
    await remember(ws.workspace.id, ws.user.id, assistant, "Prefers answers in German");
    expect((await facts(readOnly)).map((f) => f.content)).toEqual(["Prefers answers in German"]);
  });
});

describe("facts", () => {
  let ws: Ws;
  let other: Ws;
  let member: Awaited<ReturnType<typeof addUser>>;
  let assistant: AgentRef;

  beforeAll(async () => {
    [ws, other] = await Promise.all([signupWorkspace(), signupWorkspace()]);
    member = await addUser(ws.adminToken, "member", ["memory:read", "memory:write"]);
    assistant = await defaultAgent(ws.adminToken);
  });

  it("lists only the caller's own facts, newest first, with the agent that wrote them", async () => {
    expect(await facts(member.token)).toEqual([]);
    await remember(ws.workspace.id, member.user.id, assistant, "Works on the billing team", "Has two cats");
    await remember(ws.workspace.id, ws.user.id, assistant, "The admin's own fact");
    const list = await facts(member.token);
    expect(list.map((f) => f.content)).toEqual(["Has two cats", "Works on the billing team"]);
    expect(list.every((f) => f.agent_slug === "assistant")).toBe(true);
    expect((await facts(ws.adminToken)).map((f) => f.content)).toEqual(["The admin's own fact"]);
  });

  it("deletes the caller's own fact (204, then 404) and records it without the fact's text", async () => {
    const [id] = await remember(ws.workspace.id, member.user.id, assistant, "Lives in Lisbon near the river");
    const res = await call("DELETE", `/v1/memory/facts/${id}`, { token: member.token });
    expect(res.status).toBe(204);
    expect(await res.text()).toBe("");
    expect((await facts(member.token)).some((f) => f.id === id)).toBe(false);
    await expectProblem(await call("DELETE", `/v1/memory/facts/${id}`, { token: member.token }), 404, "not_found");

    const [event] = (await auditEvents(ws.workspace.id, "memory.fact.delete")).filter(
      (e) => e.target === `memory_fact:${id}`,
    );
    expect(event).toMatchObject({ outcome: "success", actor_id: member.user.id, intent: "delete" });
    expect(event!.details).toEqual({ agent_slug: "assistant" });
    expect(JSON.stringify(event)).not.toContain("Lisbon");
  });

  it("another user's fact, another workspace's fact and an unknown id are 404; a malformed id is 400", async () => {
    const [adminFact] = await remember(ws.workspace.id, ws.user.id, assistant, "Admin secret plan");
    const otherAssistant = await defaultAgent(other.adminToken);
    const [foreignFact] = await remember(other.workspace.id, other.user.id, otherAssistant, "Foreign fact");

    await expectProblem(await call("DELETE", `/v1/memory/facts/${adminFact}`, { token: member.token }), 404);
    await expectProblem(await call("DELETE", `/v1/memory/facts/${foreignFact}`, { token: ws.adminToken }), 404);
    await expectProblem(await call("DELETE", `/v1/memory/facts/${UNKNOWN_ID}`, { token: member.token }), 404);
    await expectProblem(await call("DELETE", "/v1/memory/facts/not-a-uuid", { token: member.token }), 400);
    // both are still there
    expect((await facts(ws.adminToken)).some((f) => f.id === adminFact)).toBe(true);
    expect((await facts(other.adminToken)).some((f) => f.id === foreignFact)).toBe(true);
  });
});

describe("freezes", () => {
  let ws: Ws;
  let other: Ws;
  let member: Awaited<ReturnType<typeof addUser>>;
  let helper: AgentRef;
  let foreignAgent: AgentRef;

  beforeAll(async () => {
    [ws, other] = await Promise.all([signupWorkspace(), signupWorkspace()]);
    member = await addUser(ws.adminToken, "member", ["memory:read", "memory:write"]);
    helper = await createAgent(ws.adminToken, { slug: `helper-${unique()}`, display_name: "Helper" });
    foreignAgent = await createAgent(other.adminToken, { slug: `foreign-${unique()}`, display_name: "Foreign" });
  });

  it("freezes an agent, idempotently: the first created_at stays, the reason is replaced", async () => {
    const first = await parse(await freeze(member.token, helper.slug, { reason: "  too nosy " }), FreezeSchema);
    expect(first).toMatchObject({ agent_slug: helper.slug, frozen: true, reason: "too nosy" });
    await sleep(5);
    const again = await parse(await freeze(member.token, helper.slug, {}), FreezeSchema);
    expect(again).toEqual({ agent_slug: helper.slug, frozen: true, created_at: first.created_at });
    expect(await freezes(member.token)).toEqual([again]);

    const events = (await auditEvents(ws.workspace.id, "memory.freeze")).filter((e) => e.actor_id === member.user.id);
    expect(events.map((e) => [e.target, e.details])).toEqual([
      [`agent:${helper.id}`, { agent_slug: helper.slug, changed: false }],
      [`agent:${helper.id}`, { agent_slug: helper.slug, changed: true }],
    ]);
    expect(JSON.stringify(events)).not.toContain("too nosy");
  });

  it("an unknown agent, another workspace's agent or an overlong slug is refused", async () => {
    await expectProblem(await freeze(member.token, "no-such-agent"), 404, "not_found");
    await expectProblem(await freeze(member.token, foreignAgent.slug), 404, "not_found");
    await expectProblem(await freeze(member.token, "x".repeat(65)), 400);
    await expectProblem(await freeze(member.token, helper.slug, { reason: "x".repeat(501) }), 400);
    await expectProblem(await freeze(member.token, helper.slug, { reason: "ok", extra: 1 }), 400);
    await expectProblem(await freeze(member.token, helper.slug, { reason: 12 }), 400);
  });

  it("lists the caller's freezes newest first, and only theirs", async () => {
    const ws2 = await signupWorkspace();
    const a = await createAgent(ws2.adminToken, { slug: `a-${unique()}`, display_name: "A" });
    const b = await createAgent(ws2.adminToken, { slug: `b-${unique()}`, display_name: "B" });
    expect(await freezes(ws2.adminToken)).toEqual([]);
    await freeze(ws2.adminToken, a.slug);
    await sleep(5);
    await freeze(ws2.adminToken, "assistant");
    await sleep(5);
    await freeze(ws2.adminToken, b.slug);
    expect((await freezes(ws2.adminToken)).map((f) => f.agent_slug)).toEqual([b.slug, "assistant", a.slug]);
    const colleague = await addUser(ws2.adminToken, "member", ["memory:read"]);
    expect(await freezes(colleague.token)).toEqual([]);
  });

  it("names an agent by an alias and keeps the freeze across a rename", async () => {
    const agent = await createAgent(ws.adminToken, {
      slug: `old-${unique()}`,
      display_name: "Renamed",
      aliases: [`nick-${unique()}`],
    });
    const frozen = await parse(await freeze(member.token, agent.aliases[0]!), FreezeSchema);
    expect(frozen.agent_slug).toBe(agent.slug);

    const newSlug = `new-${unique()}`;
    const res = await call("PATCH", `/v1/agents/${agent.id}`, { token: ws.adminToken, body: { slug: newSlug } });
    expect(res.status).toBe(200);
    const renamed = { id: agent.id, slug: newSlug };
    expect((await toolsFor(ws.workspace.id, member.user.id, renamed)).tools).toEqual({});

    // unfreezing by the new slug lifts the freeze stored under the old one
    expect(await parse(await unfreeze(member.token, newSlug), UnfreezeSchema)).toEqual({
      agent_slug: newSlug,
      frozen: false,
    });
    expect(await freezes(member.token)).not.toContainEqual(expect.objectContaining({ agent_slug: agent.slug }));
    expect(Object.keys((await toolsFor(ws.workspace.id, member.user.id, renamed)).tools).sort()).toEqual([
      "recall",
      "remember",
    ]);
  });

  it("unfreezes idempotently and records both calls", async () => {
    await freeze(member.token, helper.slug);
    const first = await unfreeze(member.token, helper.slug);
    expect(await parse(first, UnfreezeSchema)).toEqual({ agent_slug: helper.slug, frozen: false });
    const second = await unfreeze(member.token, helper.slug);
    expect(await parse(second, UnfreezeSchema)).toEqual({ agent_slug: helper.slug, frozen: false });
    expect((await freezes(member.token)).map((f) => f.agent_slug)).not.toContain(helper.slug);

    const events = (await auditEvents(ws.workspace.id, "memory.unfreeze")).filter(
      (e) => e.target === `agent:${helper.id}`,
    );
    expect(events.map((e) => e.details)).toEqual([
      { agent_slug: helper.slug, changed: false },
      { agent_slug: helper.slug, changed: true },
    ]);
  });

  // spec: "Unfreezes that agent for the caller ... Idempotent. Response `{ agent_slug, frozen: false }`." — 200 only
  it("unfreezing an unknown agent or another workspace's agent is 200 frozen: false, and records nothing", async () => {
    const before = await auditEvents(ws.workspace.id, "memory.unfreeze");
    for (const slug of ["no-such-agent", foreignAgent.slug]) {
      expect(await parse(await unfreeze(member.token, slug), UnfreezeSchema)).toEqual({
        agent_slug: slug,
        frozen: false,
      });
    }
    // nothing was lifted and the slug names no agent: no event (a known agent's no-op unfreeze is recorded)
    expect(await auditEvents(ws.workspace.id, "memory.unfreeze")).toEqual(before);
    expect(await auditEvents(other.workspace.id, "memory.unfreeze")).toEqual([]);
    await expectProblem(await unfreeze(member.token, "x".repeat(65)), 400);
  });

  it("lifts a freeze kept under a slug that no longer names an agent, and records that one", async () => {
    const old = `was-${unique()}`;
    const agent = await createAgent(ws.adminToken, { slug: old, display_name: "Renamed away" });
    await freeze(member.token, old);
    await call("PATCH", `/v1/agents/${agent.id}`, { token: ws.adminToken, body: { slug: `now-${unique()}` } });
    await call("PATCH", `/v1/agents/${agent.id}`, { token: ws.adminToken, body: { aliases: [] } });
    expect(await parse(await unfreeze(member.token, old), UnfreezeSchema)).toEqual({ agent_slug: old, frozen: false });
    expect(await countRows("memory_freezes", member.user.id)).toBe(0);
    const [event] = (await auditEvents(ws.workspace.id, "memory.unfreeze")).filter(
      (e) => e.target === `agent_slug:${old}`,
    );
    expect(event?.details).toEqual({ agent_slug: old, changed: true });
  });

  it("one user's freeze does not freeze the agent for a colleague", async () => {
    await freeze(member.token, helper.slug);
    expect((await toolsFor(ws.workspace.id, member.user.id, helper)).tools).toEqual({});
    expect(Object.keys((await toolsFor(ws.workspace.id, ws.user.id, helper)).tools)).toHaveLength(2);
    await unfreeze(member.token, helper.slug);
  });
});

describe("the remember and recall tools", () => {
  let ws: Ws;
  let assistant: AgentRef;
  let helper: AgentRef;

  beforeAll(async () => {
    ws = await signupWorkspace();
    assistant = await defaultAgent(ws.adminToken);
    helper = await createAgent(ws.adminToken, { slug: `helper-${unique()}`, display_name: "Helper" });
  });

  it("offers remember and recall with an instruction for the system prompt", async () => {
    const offered = await toolsFor(ws.workspace.id, ws.user.id, assistant);
    expect(Object.keys(offered.tools).sort()).toEqual(["recall", "remember"]);
    expect(offered.instructions).toEqual([MEMORY_INSTRUCTIONS]);
  });

  it("a frozen agent gets no memory tools and no instructions; other agents still do", async () => {
    const user = await addUser(ws.adminToken, "member", ["memory:write"]);
    expect((await freeze(user.token, helper.slug)).status).toBe(200);
    expect(await toolsFor(ws.workspace.id, user.user.id, helper)).toEqual({ tools: {} });
    expect(Object.keys((await toolsFor(ws.workspace.id, user.user.id, assistant)).tools)).toHaveLength(2);
  });

  it("asks D1 once per turn: the agent's handles and the user's freeze under any of them", async () => {
    const user = await addUser(ws.adminToken, "member", ["memory:write"]);
    const alias = `nick-${unique()}`;
    const agent = await createAgent(ws.adminToken, { slug: `aka-${unique()}`, display_name: "Aka", aliases: [alias] });
    const d1 = countingD1();
    const turnOf = (a: AgentRef) => memoryArea.tools!({ ...scopeOf(ws.workspace.id, user.user.id, a), env: d1.env });
    expect(Object.keys((await turnOf(agent)).tools).sort()).toEqual(["recall", "remember"]);
    expect(d1.take()).toBe(1);
    // Frozen under its alias: the agent's slug alone would not find the freeze.
    expect((await freeze(user.token, alias)).status).toBe(200);
    await env.DB.prepare("UPDATE memory_freezes SET agent_slug = ?1 WHERE user_id = ?2")
      .bind(alias, user.user.id)
      .run();
    expect(await turnOf(agent)).toEqual({ tools: {} });
    expect(d1.take()).toBe(1);
  });

  it("takes the handles and the freeze the turn's caller read in its own batch: no round trip of its own", async () => {
    const user = await addUser(ws.adminToken, "member", ["memory:write"]);
    const d1 = countingD1();
    const scope = (state: AskingAgentState) => ({
      ...scopeOf(ws.workspace.id, user.user.id, helper),
      env: d1.env,
      prefetched: { [ASKING_AGENT]: state },
    });
    const offered = await memoryArea.tools!(
      scope({ agent: { slug: helper.slug, handles: [helper.slug] }, frozen: false }),
    );
    expect(Object.keys(offered.tools).sort()).toEqual(["recall", "remember"]);
    const frozen = await memoryArea.tools!(
      scope({ agent: { slug: helper.slug, handles: [helper.slug] }, frozen: true }),
    );
    expect(frozen).toEqual({ tools: {} });
    expect(d1.take()).toBe(0);
  });

  it("a freeze after the tools were handed out makes both tools refuse, reading and writing nothing", async () => {
    const user = await addUser(ws.adminToken, "member", ["memory:read", "memory:write"]);
    const { tools } = await toolsFor(ws.workspace.id, user.user.id, helper);
    expect((await exec<RememberResult>(tools, "remember", { content: "Likes jazz" })).remembered).toBe(true);
    const eventsBefore = (await auditEvents(ws.workspace.id, "memory.fact.create")).length;

    expect((await freeze(user.token, helper.slug)).status).toBe(200);
    const refused = await exec<RememberResult>(tools, "remember", { content: "Likes opera" });
    expect(refused.remembered).toBe(false);
    expect(refused.error).toMatch(/frozen/);
    const recalled = await exec<RecallResult>(tools, "recall", { query: "jazz" });
    expect(recalled.facts).toEqual([]);
    expect(recalled.error).toMatch(/frozen/);
    expect((await facts(user.token)).map((f) => f.content)).toEqual(["Likes jazz"]);
    // The stored fact was audited (without its content); the refused one left no event.
    const [stored] = await facts(user.token);
    const events = await auditEvents(ws.workspace.id, "memory.fact.create");
    expect(events).toHaveLength(eventsBefore);
    expect(events.filter((e) => e.target === `memory_fact:${stored!.id}`)).toEqual([
      expect.objectContaining({ outcome: "success", intent: "remember", details: { agent_slug: helper.slug } }),
    ]);
    expect(JSON.stringify(events)).not.toContain("jazz");

    // unfrozen, the same tools work again
    expect((await unfreeze(user.token, helper.slug)).status).toBe(200);
    expect((await exec<RecallResult>(tools, "recall", { query: "jazz" })).facts.map((f) => f.content)).toEqual([
      "Likes jazz",
    ]);
  });

  it("recall ranks the user's facts by shared words, rare words first, newest first on ties", async () => {
    const user = await addUser(ws.adminToken, "member", ["memory:read"]);
    await remember(
      ws.workspace.id,
      user.user.id,
      assistant,
      "Lives in Berlin with two cats",
      "Favourite colour is dark green",
      "Works as a data engineer at a logistics company",
      "Allergic to peanuts",
      "Drinks green tea every morning",
    );
    const { tools } = await toolsFor(ws.workspace.id, user.user.id, helper);
    const recall = async (query: string) =>
      (await exec<RecallResult>(tools, "recall", { query })).facts.map((f) => f.content);

    expect(await recall("What is my favourite colour?")).toEqual(["Favourite colour is dark green"]);
    // "green" is in two facts: the one matching more words comes first, then the newer
    expect(await recall("green colour")).toEqual(["Favourite colour is dark green", "Drinks green tea every morning"]);
    expect(await recall("green")).toEqual(["Drinks green tea every morning", "Favourite colour is dark green"]);
    expect(await recall("Which CATS do I have?")).toEqual(["Lives in Berlin with two cats"]);
    expect(await recall("quantum chromodynamics")).toEqual([]);
    // no usable words: the newest facts
    expect((await recall("?")).slice(0, 2)).toEqual(["Drinks green tea every morning", "Allergic to peanuts"]);
  });

  it("remember normalizes whitespace and refuses empty or overlong facts through its input schema", async () => {
    const user = await addUser(ws.adminToken, "member", ["memory:read"]);
    await remember(ws.workspace.id, user.user.id, assistant, "  Speaks\n\nPortuguese   and English ");
    expect((await facts(user.token)).map((f) => f.content)).toEqual(["Speaks Portuguese and English"]);
    const { tools } = await toolsFor(ws.workspace.id, user.user.id, assistant);
    const schema = tools.remember!.inputSchema as unknown as { safeParse: (v: unknown) => { success: boolean } };
    expect(schema.safeParse({ content: "   " }).success).toBe(false);
    expect(schema.safeParse({ content: "x".repeat(501) }).success).toBe(false);
    expect(schema.safeParse({ content: "x".repeat(500) }).success).toBe(true);
    // execute bounds the fact again for a caller that skips the schema
    for (const content of ["  \n ", "x".repeat(501)])
      expect(await exec<RememberResult>(tools, "remember", { content })).toMatchObject({ remembered: false });
    expect(await facts(user.token)).toHaveLength(1);
  });

  it(`keeps at most ${FACTS_PER_USER} facts per user: remembering one more drops the oldest`, async () => {
    const user = await addUser(ws.adminToken, "member", ["memory:read"]);
    const stmt = env.DB.prepare(
      "INSERT INTO memory_facts (id, workspace_id, user_id, agent_slug, content, created_at) VALUES (?, ?, ?, 'assistant', ?, ?)",
    );
    const ids = Array.from({ length: FACTS_PER_USER }, () => newId());
    await env.DB.batch(
      ids.map((id, i) => stmt.bind(id, ws.workspace.id, user.user.id, `fact ${i}`, new Date().toISOString())),
    );
    const [newest] = await remember(ws.workspace.id, user.user.id, assistant, "The newest fact");
    const list = await facts(user.token);
    expect(list).toHaveLength(FACTS_PER_USER);
    expect(list[0]!.id).toBe(newest);
    expect(list.map((f) => f.id)).not.toContain(ids[0]);
    expect(list.map((f) => f.id)).toContain(ids[1]);
  });

  it("works as tools of an AI SDK turn: the model remembers, then recalls", async () => {
    const user = await addUser(ws.adminToken, "member", ["memory:read"]);
    const offered = await toolsFor(ws.workspace.id, user.user.id, assistant);
    const usage = {
      inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: 1, text: 1, reasoning: undefined },
    };
    const call = (toolName: string, input: object) => ({
      content: [
        { type: "tool-call" as const, toolCallId: crypto.randomUUID(), toolName, input: JSON.stringify(input) },
      ],
      finishReason: { unified: "tool-calls" as const, raw: undefined },
      usage,
      warnings: [],
    });
    const steps = [
      call("remember", { content: "Runs marathons" }),
      call("recall", { query: "marathon" }),
      {
        content: [{ type: "text" as const, text: "done" }],
        finishReason: { unified: "stop" as const, raw: undefined },
        usage,
        warnings: [],
      },
    ];
    let n = 0;
    const model = new MockLanguageModelV4({ doGenerate: async () => steps[n++]! });
    const result = await generateText({
      model,
      system: offered.instructions!.join("\n"),
      prompt: "Remember that I run marathons",
      tools: offered.tools,
      stopWhen: stepCountIs(5),
    });
    expect(result.text).toBe("done");
    const outputs = result.steps.flatMap((s) => s.toolResults.map((r) => [r.toolName, r.output]));
    expect(outputs[0]).toEqual(["remember", { remembered: true, id: expect.any(String) }]);
    expect(outputs[1]).toEqual(["recall", { facts: [{ content: "Runs marathons", created_at: expect.any(String) }] }]);
  });
});

describe("ranking", () => {
  const fact = (content: string, created_at: string, id = newId()): Fact => ({
    id,
    content,
    agent_slug: "assistant",
    created_at,
  });

  it("tokenizes case-, accent- and plural-insensitively, without stopwords", () => {
    expect(tokenize("The Cafés of Zürich, and my CATS!")).toEqual(["cafe", "zurich", "cat"]);
  });

  it("limits the answer and orders ties by created_at", () => {
    const old = fact("likes tea", "2026-01-01T00:00:00.000Z");
    const newer = fact("likes tea too", "2026-02-01T00:00:00.000Z");
    expect(rankFacts([old, newer], "tea", RECALL_LIMIT)).toEqual([newer, old]);
    expect(rankFacts([old, newer], "tea", 1)).toEqual([newer]);
  });
});

describe("erasure", () => {
  it("the erase step deletes the user's facts and freezes and counts them; colleagues keep theirs", async () => {
    const ws = await signupWorkspace();
    const assistant = await defaultAgent(ws.adminToken);
    const helper = await createAgent(ws.adminToken, { slug: `helper-${unique()}`, display_name: "Helper" });
    const victim = await addUser(ws.adminToken, "member", ["memory:write"]);
    await remember(ws.workspace.id, victim.user.id, assistant, "Fact one", "Fact two", "Fact three");
    await remember(ws.workspace.id, ws.user.id, assistant, "Admin fact");
    await freeze(victim.token, helper.slug);
    await freeze(victim.token, "assistant");

    const res = await call("POST", `/v1/admin/users/${victim.user.id}/erase`, {
      token: ws.adminToken,
      body: { confirm: true },
    });
    expect(res.status).toBe(200);
    const summary = await parse(res, ErasureSummarySchema);
    expect(summary.counts).toMatchObject({ memory_facts: 3, memory_freezes: 2 });
    expect(await countRows("memory_facts", victim.user.id)).toBe(0);
    expect(await countRows("memory_freezes", victim.user.id)).toBe(0);
    expect(await countRows("memory_facts", ws.user.id)).toBe(1);

    // idempotent: nothing left to delete
    expect(await memoryArea.eraseStep!(env, ws.workspace.id, victim.user.id)).toEqual({
      memory_freezes: 0,
      memory_facts: 0,
    });
  });
});
