import { env } from "cloudflare:workers";
import { HttpResponse, http } from "msw";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AgentRowSchema } from "../src/agents/schemas";
import { MODEL_LIST_TTL_MS, providerModels } from "../src/llm/provider-models";
import { createAgent, getAgent } from "./support/agents";
import { call, expectProblem, parse } from "./support/api";
import { auditEvents } from "./support/audit";
import { callWith, fakeLlm, LLM_ENV, llmServer, PROVIDER_MODELS } from "./support/fake-llm";
import { signupWorkspace } from "./support/seed";
import { unique } from "./support/unique";

/**
 * "An agent's pinned model that the provider does not offer is refused when the agent is saved,
 * not at the first turn." With an OpenAI-compatible provider, its `GET /models` list decides;
 * a provider that answers no list cannot tell, and the model is kept as given.
 */

let ws: Awaited<ReturnType<typeof signupWorkspace>>;
beforeAll(async () => {
  llmServer.listen({ onUnhandledRequest: "error" });
  ws = await signupWorkspace();
});
afterEach(() => {
  llmServer.resetHandlers();
  fakeLlm.reset();
});
afterAll(() => llmServer.close());

const save = (vars: Record<string, unknown>, body: Record<string, unknown>) =>
  callWith(vars, "POST", "/v1/agents", { token: ws.adminToken, body });
const modelRequests = () => fakeLlm.requests.filter((r) => r.path === "/models");
const agentEvents = async (kind: string, target?: string) =>
  (await auditEvents(ws.workspace.id, kind)).filter((e) => !target || e.target === target);

describe("a pinned model checked against the provider's model list", () => {
  it("accepts a model the provider lists, asking it with the configured key", async () => {
    const slug = `pinned-${unique()}`;
    const res = await save(LLM_ENV, { slug, display_name: "Pinned", model: "gpt-oss-120b" });
    expect(res.status).toBe(200);
    expect((await parse(res, AgentRowSchema)).model).toBe("gpt-oss-120b");
    // The first save of the file asks the provider; later ones within minutes use its list.
    expect(modelRequests()).toHaveLength(1);
    expect(modelRequests()[0]!.headers.get("Authorization")).toBe(`Bearer ${LLM_ENV.LLM_API_KEY}`);
  });

  it("refuses on create a model the provider does not list: 400 unknown_model with available_models; nothing saved", async () => {
    const slug = `unlisted-${unique()}`;
    // qwen3-30b belongs to the standard profile, but this provider does not offer it.
    const problem = await expectProblem(
      await save(LLM_ENV, { slug, display_name: "Unlisted", model: "qwen3-30b" }),
      400,
      "unknown_model",
    );
    expect(problem.detail).toContain('"qwen3-30b"');
    expect(problem.errors).toEqual([{ path: "model", message: problem.detail }]);
    expect((problem as unknown as { available_models: string[] }).available_models).toEqual([...PROVIDER_MODELS]);
    const listed = (await (await call("GET", "/v1/agents", { token: ws.adminToken })).json()) as {
      agents: { slug: string }[];
    };
    expect(listed.agents.map((a) => a.slug)).not.toContain(slug);
    expect((await agentEvents("agent.create")).filter((e) => e.details.slug === slug)).toEqual([]);
  });

  it("refuses on update a model the provider does not list, and leaves the agent and its log unchanged", async () => {
    const agent = await createAgent(ws.adminToken, { slug: `upd-${unique()}`, display_name: "Update me" });
    const problem = await expectProblem(
      await callWith(LLM_ENV, "PATCH", `/v1/agents/${agent.id}`, {
        token: ws.adminToken,
        body: { model: "qwen3-30b", display_name: "Changed" },
      }),
      400,
      "unknown_model",
    );
    expect((problem as unknown as { available_models: string[] }).available_models).toContain("gpt-oss-120b");
    expect(await getAgent(ws.adminToken, agent.id)).toMatchObject({ model: null, display_name: "Update me" });
    expect(await agentEvents("agent.update", `agent:${agent.id}`)).toEqual([]);

    const ok = await callWith(LLM_ENV, "PATCH", `/v1/agents/${agent.id}`, {
      token: ws.adminToken,
      body: { model: "llama-3.3-70b" },
    });
    expect(ok.status).toBe(200);
    expect((await parse(ok, AgentRowSchema)).model).toBe("llama-3.3-70b");
  });

  it("does not refuse an edit of another field for a model pinned before the provider was configured", async () => {
    // Pinned with no provider (Workers AI or none): nothing could tell.
    const agent = await createAgent(ws.adminToken, {
      slug: `old-${unique()}`,
      display_name: "Old pin",
      model: "qwen3-30b",
    });
    const res = await callWith(LLM_ENV, "PATCH", `/v1/agents/${agent.id}`, {
      token: ws.adminToken,
      body: { display_name: "Renamed" },
    });
    expect(res.status).toBe(200);
    expect(await parse(res, AgentRowSchema)).toMatchObject({ display_name: "Renamed", model: "qwen3-30b" });
  });

  it("accepts the model as given when the provider answers no list: 404, 501, a network error, another shape", async () => {
    const answers: [string, () => Response][] = [
      ["404", () => new HttpResponse("not found", { status: 404 })],
      ["501", () => HttpResponse.json({ error: { message: "not implemented" } }, { status: 501 })],
      ["network error", () => HttpResponse.error()],
      ["no data list", () => HttpResponse.json({ models: ["qwen3-30b"] })],
    ];
    for (const [label, answer] of answers) {
      const base = `https://nolist-${unique()}.test/v1`;
      llmServer.use(http.get(`${base}/models`, answer));
      const res = await save(
        { ...LLM_ENV, LLM_BASE_URL: base },
        { slug: `nolist-${unique()}`, display_name: "No list", model: "qwen3-30b" },
      );
      expect(res.status, label).toBe(200);
      expect((await parse(res, AgentRowSchema)).model, label).toBe("qwen3-30b");
    }
  });

  it("accepts the model on the Workers AI binding, which has no list, without asking anyone", async () => {
    const res = await save(
      { LLM_BASE_URL: undefined, AI: {} },
      { slug: `wai-${unique()}`, display_name: "Workers AI", model: "qwen3-30b" },
    );
    expect(res.status).toBe(200);
    expect(modelRequests()).toEqual([]);
  });

  it("checks the runtime profile first: a model outside it is invalid_model, the provider is not asked", async () => {
    const base = `https://unasked-${unique()}.test/v1`;
    await expectProblem(
      await save({ ...LLM_ENV, LLM_BASE_URL: base }, { slug: `bad-${unique()}`, display_name: "Bad", model: "gpt-5" }),
      400,
      "invalid_model",
    );
    // An unhandled request would have failed the test (onUnhandledRequest: "error").
  });
});

describe("the provider's list, kept per isolate", () => {
  it("is asked once, then again only after five minutes", async () => {
    const base = `https://cached-${unique()}.test/v1`;
    let asked = 0;
    llmServer.use(
      http.get(`${base}/models`, () => {
        asked++;
        return HttpResponse.json({ object: "list", data: [{ id: "m1", object: "model", created: 0, owned_by: "x" }] });
      }),
    );
    const vars = { ...env, LLM_BASE_URL: base, LLM_API_KEY: "k" } as Env;
    const t0 = Date.now();
    expect(await providerModels(vars, t0)).toEqual(["m1"]);
    expect(await providerModels(vars, t0 + MODEL_LIST_TTL_MS - 1)).toEqual(["m1"]);
    expect(asked).toBe(1);
    expect(await providerModels(vars, t0 + MODEL_LIST_TTL_MS + 1)).toEqual(["m1"]);
    expect(asked).toBe(2);
  });
});
