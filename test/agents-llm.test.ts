import { env } from "cloudflare:workers";
import { MockLanguageModelV4 } from "ai/test";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type AgentRow, SuggestInstructionsResponseSchema } from "../src/agents/schemas";
import { draftInstructions, redactForModel, SUGGESTION_SYSTEM_PROMPT, suggestionPrompt } from "../src/agents/suggest";
import { agentLanguageModel, imageModel, languageModel } from "../src/llm/model";
import { effectiveModel, modelBelongsTo, RUNTIME_PROFILES } from "../src/llm/models";
import { ApiError } from "../src/platform/problem";
import { createAgent, getAgent } from "./support/agents";
import { call, expectProblem, parse } from "./support/api";
import { auditEvents } from "./support/audit";
import { callWith, fakeLlm, LLM_ENV, llmServer } from "./support/fake-llm";
import { deleteProfile, seedProfile } from "./support/profile";
import { mockTextReply } from "./support/scripted-llm";
import { addUser, signupWorkspace } from "./support/seed";

type ChatBody = { model: string; messages: { role: string; content: string }[] };

describe("POST /v1/agents/{id}/suggest-instructions", () => {
  let ws: Awaited<ReturnType<typeof signupWorkspace>>;
  let agent: AgentRow;
  beforeAll(async () => {
    llmServer.listen({ onUnhandledRequest: "error" });
    ws = await signupWorkspace("Harbor Freight Co");
    await addUser(ws.adminToken, "member", ["agents:read"]);
    await call("PUT", "/v1/api/skills/web-search", { token: ws.adminToken });
    await call("PUT", "/v1/api/skills/document-reader", { token: ws.adminToken });
    await createAgent(ws.adminToken, {
      slug: "secret-project",
      display_name: "Other Agent",
      instructions: "Internal: codename bluebird.",
    });
    agent = await createAgent(ws.adminToken, {
      slug: "concierge",
      display_name: "Concierge",
      description:
        "Books shipments for customers. Escalate to ops@harbor.example or +1 415 555 0100. Key: sk-live-abcdefghijklmnopqrstuvwx",
      tone: "friendly",
      languages: ["en-US", "es"],
      cautions: ["customs advice"],
      skills: ["document-reader"],
    });
  });
  afterEach(async () => {
    fakeLlm.reset();
    await deleteProfile(ws.workspace.id);
  });
  afterAll(() => llmServer.close());

  const suggest = (id = agent.id, vars: Record<string, string | undefined> = LLM_ENV) =>
    callWith(vars, "POST", `/v1/agents/${id}/suggest-instructions`, { token: ws.adminToken });

  it("drafts from the agent and the business profile through the configured endpoint, without saving", async () => {
    await seedProfile(ws.workspace.id, "harbor.example", {
      summary: "Freight forwarding for small importers.",
      industry: "Logistics",
      technologies: [
        { name: "Shopify", confidence: 0.95 },
        { name: "Zendesk", confidence: 0.9 },
      ],
    });
    fakeLlm.chatReply = "```\nYou are Concierge, the shipping assistant of Harbor Freight Co.\n```";
    const res = await suggest();
    expect(res.status).toBe(200);
    expect(await parse(res, SuggestInstructionsResponseSchema)).toEqual({
      draft: "You are Concierge, the shipping assistant of Harbor Freight Co.",
    });

    expect(fakeLlm.requests).toHaveLength(1);
    const [req] = fakeLlm.requests;
    expect(req!.path).toBe("/chat/completions");
    expect(req!.headers.get("Authorization")).toBe("Bearer sk-test-provider-key");
    const body = req!.body as ChatBody;
    expect(body.model).toBe("test-chat-model");
    expect(body.messages[0]).toEqual({ role: "system", content: SUGGESTION_SYSTEM_PROMPT });
    const prompt = body.messages
      .filter((m) => m.role === "user")
      .map((m) => m.content)
      .join("\n");
    for (const fact of [
      "Harbor Freight Co",
      "harbor.example",
      "Freight forwarding for small importers.",
      "Logistics",
      "Shopify, Zendesk",
      "Concierge",
      "@concierge",
      "friendly",
      "en-US, es",
      "customs advice",
      "Document reader",
    ]) {
      expect(prompt).toContain(fact);
    }
    // skills not enabled for this agent, and everything about other agents and people, stay out
    expect(prompt).not.toContain("Web search");

    // not saved
    expect((await getAgent(ws.adminToken, agent.id)).instructions).toBeNull();
    const [event] = await auditEvents(ws.workspace.id, "agent.suggest");
    expect(event).toMatchObject({ target: `agent:${agent.id}`, intent: "suggest_instructions", agent_id: agent.id });
    expect(event!.details).toEqual({ profile_used: true, draft_length: 63 });
  });

  it("never sends secrets, contact details, members or other agents to the model", async () => {
    await suggest();
    const sent = JSON.stringify(fakeLlm.requests[0]!.body);
    for (const secret of [
      ws.adminToken,
      ws.email,
      "Ada Admin",
      "member user",
      "ops@harbor.example",
      "415 555 0100",
      "sk-live-abcdefghijklmnopqrstuvwx",
      "secret-project",
      "bluebird",
      "Other Agent",
    ]) {
      expect(sent).not.toContain(secret);
    }
    expect(sent).toContain("[email]");
    expect(sent).toContain("[phone]");
    expect(sent).toContain("[redacted]");
  });

  it("works without a business profile and says so to the model", async () => {
    const res = await suggest();
    expect(res.status).toBe(200);
    const prompt = JSON.stringify(fakeLlm.requests[0]!.body);
    expect(prompt).toContain("no business profile is available");
    const [event] = await auditEvents(ws.workspace.id, "agent.suggest");
    expect(event!.details.profile_used).toBe(false);
  });

  it("sends the admin's own instructions as the current role, never the platform-seeded text", async () => {
    const [assistant] = (
      (await (await call("GET", "/v1/agents", { token: ws.adminToken })).json()) as { agents: AgentRow[] }
    ).agents;
    await suggest(assistant!.id);
    expect(JSON.stringify(fakeLlm.requests[0]!.body)).not.toContain("Current instructions");
    fakeLlm.reset();
    await call("PATCH", `/v1/agents/${assistant!.id}`, {
      token: ws.adminToken,
      body: { instructions: "Route freight quotes to the sales team." },
    });
    await suggest(assistant!.id);
    expect(JSON.stringify(fakeLlm.requests[0]!.body)).toContain(
      "Current instructions: Route freight quotes to the sales team.",
    );
  });

  it("500 model_not_configured when no provider is configured, without calling anything", async () => {
    // the shared test env has neither LLM_BASE_URL nor an AI binding
    await expectProblem(
      await call("POST", `/v1/agents/${agent.id}/suggest-instructions`, { token: ws.adminToken }),
      500,
      "model_not_configured",
    );
    await expectProblem(await suggest(agent.id, { LLM_BASE_URL: undefined }), 500, "model_not_configured");
    expect(fakeLlm.requests).toHaveLength(0);
  });

  it("500 suggestion_failed when the provider fails or answers with nothing", async () => {
    fakeLlm.chatReply = 503;
    await expectProblem(await suggest(), 500, "suggestion_failed");
    fakeLlm.chatReply = "   ";
    await expectProblem(await suggest(), 500, "suggestion_failed");
  });

  it("404 for an unknown agent before checking the configuration", async () => {
    await expectProblem(
      await call("POST", "/v1/agents/0190f5e2-7c1a-7000-8000-000000000000/suggest-instructions", {
        token: ws.adminToken,
      }),
      404,
    );
  });
});

describe("draftInstructions against AI SDK mock models", () => {
  const agent: AgentRow = {
    id: "0190f5e2-7c1a-7000-8000-000000000001",
    slug: "triage",
    display_name: "Triage",
    aliases: [],
    cautions: [],
    languages: [],
    approval_required: [],
    runtime_profile: "standard",
    delivery_mode: "chat",
    status: "enabled",
    is_default: false,
    instructions_is_default: false,
    created_at: "2026-11-22T00:00:00.000Z",
    description: "Sorts incoming support tickets",
    instructions: "Tag tickets by product.",
    tone: null,
    verbosity: null,
    model: null,
    avatar_url: null,
  };
  const reply = mockTextReply;

  it("sends the system prompt and the facts, and returns the model's text", async () => {
    const model = new MockLanguageModelV4({ doGenerate: reply("You are Triage.") });
    const draft = await draftInstructions(model, {
      agent,
      workspaceName: "Acme",
      profile: { industry: "SaaS", size_hint: "11-50" },
      skills: ["Web search"],
    });
    expect(draft).toBe("You are Triage.");
    expect(model.doGenerateCalls).toHaveLength(1);
    const [system, user] = model.doGenerateCalls[0]!.prompt;
    expect(system).toEqual({ role: "system", content: SUGGESTION_SYSTEM_PROMPT });
    expect(JSON.stringify(user)).toContain("Industry: SaaS");
    expect(JSON.stringify(user)).toContain("Size: 11-50");
    expect(JSON.stringify(user)).toContain("Current instructions: Tag tickets by product.");
    expect(JSON.stringify(user)).toContain("Skills it can use: Web search");
  });

  it("turns a model error into a 500 problem", async () => {
    const model = new MockLanguageModelV4({
      doGenerate: async () => {
        throw new Error("boom");
      },
    });
    const err = await draftInstructions(model, { agent, workspaceName: "Acme", profile: null, skills: [] }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 500, code: "suggestion_failed" });
  });

  it("lists only the facts that are set", () => {
    const prompt = suggestionPrompt({
      agent: { ...agent, description: null, instructions: null },
      workspaceName: "Acme",
      profile: null,
      skills: [],
    });
    expect(prompt).not.toContain("Role description");
    expect(prompt).not.toContain("Current instructions");
    expect(prompt).not.toContain("Skills it can use");
    expect(prompt).not.toContain("Tone");
  });
});

describe("redactForModel", () => {
  const CASES: [string, string][] = [
    ["mail jane.doe@example.com now", "mail [email] now"],
    ["call +44 20 7946 0958 today", "call [phone] today"],
    ["call (415) 555-0100", "call [phone]"],
    ["token svc_pat_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefg", "token [redacted]"],
    ["key sk-proj-abcdefghijklmnop", "key [redacted]"],
    ["gh ghp_abcdefghijklmnopqrstuvwxyz0123456789", "gh [redacted]"],
    ["aws AKIAIOSFODNN7EXAMPLE", "aws [redacted]"],
    [
      "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
      "jwt [redacted]",
    ],
    ["db postgres://admin:hunter2@db.internal/app", "db postgres://[redacted]@db.internal/app"],
    ["hash 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "hash [redacted]"],
  ];
  for (const [input, output] of CASES) {
    it(`scrubs "${input}"`, () => expect(redactForModel(input)).toBe(output));
  }

  it("leaves ordinary business text alone", () => {
    const text =
      "Founded 2019, ships to 40 countries, open 9-17, order 12345, since 2026-11-22, see harbor.example/pricing";
    expect(redactForModel(text)).toBe(text);
  });
});

describe("model wiring", () => {
  const fakeAi = {} as Ai;
  const idOf = (m: unknown) => (m as { modelId: string } | null)?.modelId;

  it("every runtime profile's default model belongs to it, and unknown pairs do not", () => {
    for (const p of Object.values(RUNTIME_PROFILES)) expect(modelBelongsTo(p.slug, p.defaultModel)).toBe(true);
    expect(modelBelongsTo("fast", "qwq-32b")).toBe(false);
    expect(modelBelongsTo("nope", "gpt-oss-20b")).toBe(false);
    expect(effectiveModel("reasoning", null).slug).toBe("deepseek-r1-32b");
    expect(effectiveModel("reasoning", "qwq-32b").slug).toBe("qwq-32b");
  });

  it("on an OpenAI-compatible endpoint: the agent's model, else LLM_MODEL, else the profile default", () => {
    const e = { ...env, LLM_BASE_URL: "https://llm.test/v1" } as Env;
    expect(
      idOf(agentLanguageModel({ ...e, LLM_MODEL: "house-model" }, { runtime_profile: "standard", model: null })),
    ).toBe("house-model");
    expect(
      idOf(agentLanguageModel({ ...e, LLM_MODEL: "house-model" }, { runtime_profile: "standard", model: "qwen3-30b" })),
    ).toBe("qwen3-30b");
    expect(idOf(agentLanguageModel(e, { runtime_profile: "fast", model: null }))).toBe("gpt-oss-20b");
  });

  it("on the AI binding: the Workers AI id of the agent's model or its profile default", () => {
    const e = { ...env, AI: fakeAi } as Env;
    expect(idOf(agentLanguageModel(e, { runtime_profile: "reasoning", model: "qwq-32b" }))).toBe("@cf/qwen/qwq-32b");
    expect(idOf(agentLanguageModel(e, { runtime_profile: "reasoning", model: null }))).toBe(
      "@cf/deepseek-ai/deepseek-r1-distill-qwen-32b",
    );
    expect(idOf(agentLanguageModel(e, { runtime_profile: "standard", model: null }))).toBe("@cf/openai/gpt-oss-120b");
  });

  it("the OpenAI-compatible endpoint wins over the AI binding; with neither, nothing is configured", () => {
    expect(
      idOf(languageModel({ ...env, LLM_BASE_URL: "https://llm.test/v1", LLM_MODEL: "m", AI: fakeAi } as Env)),
    ).toBe("m");
    expect(languageModel(env)).toBeNull();
    expect(agentLanguageModel(env, { runtime_profile: "standard", model: null })).toBeNull();
  });

  it("keeps one chat model per endpoint, key and model id in the isolate, instead of one per turn", () => {
    const e = { ...env, LLM_BASE_URL: "https://llm.test/v1", LLM_API_KEY: "sk-a" } as Env;
    const first = agentLanguageModel(e, { runtime_profile: "standard", model: "qwen3-30b" });
    expect(agentLanguageModel({ ...e } as Env, { runtime_profile: "standard", model: "qwen3-30b" })).toBe(first);
    expect(agentLanguageModel(e, { runtime_profile: "standard", model: "qwq-32b" })).not.toBe(first);
    const otherKey = agentLanguageModel({ ...e, LLM_API_KEY: "sk-b" } as Env, {
      runtime_profile: "standard",
      model: "qwen3-30b",
    });
    expect(otherKey).not.toBe(first);
    expect(idOf(otherKey)).toBe("qwen3-30b");
  });

  it("the image model needs IMAGE_MODEL and a provider", () => {
    expect(imageModel(env)).toBeNull();
    expect(imageModel({ ...env, IMAGE_MODEL: "img" } as Env)).toBeNull();
    expect(imageModel({ ...env, LLM_BASE_URL: "https://llm.test/v1" } as Env)).toBeNull();
    expect(idOf(imageModel({ ...env, LLM_BASE_URL: "https://llm.test/v1", IMAGE_MODEL: "img" } as Env))).toBe("img");
    expect(idOf(imageModel({ ...env, AI: fakeAi, IMAGE_MODEL: "@cf/black-forest-labs/flux-1-schnell" } as Env))).toBe(
      "@cf/black-forest-labs/flux-1-schnell",
    );
  });
});
