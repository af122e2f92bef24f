import { env } from "cloudflare:workers";
import { tool } from "ai";
import { convertArrayToReadableStream, MockLanguageModelV4 } from "ai/test";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { ToolProvider } from "../src/platform/turn-tools";
import { turnCredits } from "../src/runtime/credits";
import { boundedHistory } from "../src/runtime/history";
import { MAX_STEPS, runTurn, type TurnRequest } from "../src/runtime/turn";

// runTurn tested directly with an AI SDK mock model; test/conversations.test.ts drives it over
// HTTP with a fake OpenAI-compatible endpoint.

type StreamOptions = Parameters<MockLanguageModelV4["doStream"]>[0];
type Part = { type: string; [key: string]: unknown };

const usage = {
  inputTokens: { total: 1200, noCache: 1200, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 300, text: 300, reasoning: undefined },
};
const finish = (unified: "stop" | "tool-calls"): Part => ({
  type: "finish",
  finishReason: { unified, raw: undefined },
  usage,
});
const callTool = (toolName: string, input: object): Part[] => [
  { type: "stream-start", warnings: [] },
  { type: "tool-call", toolCallId: crypto.randomUUID(), toolName, input: JSON.stringify(input) },
  finish("tool-calls"),
];
const say = (text: string): Part[] => [
  { type: "stream-start", warnings: [] },
  { type: "text-start", id: "t" },
  { type: "text-delta", id: "t", delta: text },
  { type: "text-end", id: "t" },
  finish("stop"),
];

function scripted(...steps: ((options: StreamOptions) => Part[])[]) {
  const calls: StreamOptions[] = [];
  const model = new MockLanguageModelV4({
    doStream: async (options) => {
      calls.push(options);
      const parts = steps[Math.min(calls.length - 1, steps.length - 1)]!(options);
      return { stream: convertArrayToReadableStream(parts) as never };
    },
  });
  return { model, calls };
}

const toolResults = (options: StreamOptions) =>
  options.prompt.flatMap((m) => (m.role === "tool" ? m.content.filter((p) => p.type === "tool-result") : []));

function request(model: MockLanguageModelV4, providers: ToolProvider[], extra: Partial<TurnRequest> = {}): TurnRequest {
  return {
    env,
    model,
    profile: "standard",
    providers,
    workspace: { id: crypto.randomUUID(), name: "Acme" },
    userId: crypto.randomUUID(),
    agent: {
      id: crypto.randomUUID(),
      slug: "assistant",
      display_name: "Assistant",
      instructions: "Help.",
      cautions: [],
      languages: [],
      skills: [],
      mcpServers: [],
    },
    conversationId: crypto.randomUUID(),
    turnId: crypto.randomUUID(),
    origin: "https://svc.test",
    history: [],
    prompt: "Do it",
    ...extra,
  };
}

describe("runTurn", () => {
  it("offers the areas' tools, gives a failing tool's error to the model as a result, and finishes", async () => {
    const provider: ToolProvider = async (scope) => ({
      tools: {
        lookup: tool({
          description: "Looks something up",
          inputSchema: z.object({ q: z.string() }),
          execute: async ({ q }) => {
            scope.artifactIds.push("made-by-lookup");
            return { found: q };
          },
        }),
        broken: tool({
          description: "Always fails",
          inputSchema: z.object({}),
          execute: async (): Promise<string> => {
            throw new Error("the service is down");
          },
        }),
      },
      instructions: ["Use lookup for facts."],
    });
    const { model, calls } = scripted(
      () => callTool("lookup", { q: "x" }),
      () => callTool("broken", {}),
      () => say("All done."),
    );
    const { done } = await runTurn(request(model, [provider]));
    const outcome = await done;
    expect(outcome).toMatchObject({
      finish: "answered",
      text: "All done.",
      steps: 3,
      toolCalls: [
        { name: "lookup", ok: true },
        { name: "broken", ok: false },
      ],
      artifactIds: ["made-by-lookup"],
    });
    expect(JSON.stringify(toolResults(calls[2]!))).toContain("the service is down");
    const system = calls[0]!.prompt.find((m) => m.role === "system");
    expect(JSON.stringify(system)).toContain("Use lookup for facts.");
    // 1 500 tokens on the standard profile (2 per 1 000), three model calls: ceil(4 500 / 1000 × 2) = 9.
    expect(outcome.usage).toEqual({ input_tokens: 3600, output_tokens: 900, credits: 9 });
  });

  it("never offers computer_* tools, and a provider that fails drops out without failing the turn", async () => {
    const provider: ToolProvider = async () => ({
      tools: {
        computer_screenshot: tool({ inputSchema: z.object({}), execute: async () => "no" }),
        fine: tool({ inputSchema: z.object({}), execute: async () => "yes" }),
      },
    });
    const failing: ToolProvider = async () => {
      throw new Error("MCP server unreachable");
    };
    const { model, calls } = scripted(() => say("ok"));
    const outcome = await (await runTurn(request(model, [provider, failing]))).done;
    expect(outcome.finish).toBe("answered");
    expect(calls[0]!.tools?.map((t) => t.name)).toEqual(["fine"]);
  });

  it("converts each tool's input schema to JSON Schema once: every turn hands the model the same one", async () => {
    const LookupInput = z.object({ q: z.string().describe("What to look up") });
    const provider: ToolProvider = async () => ({
      tools: { lookup: tool({ inputSchema: LookupInput, execute: async () => "found" }) },
    });
    const { model, calls } = scripted(() => say("ok"));
    for (let i = 0; i < 2; i++) await (await runTurn(request(model, [provider]))).done;
    const [a, b] = calls.map((c) => c.tools?.find((t) => t.name === "lookup"));
    expect(a && "inputSchema" in a && a.inputSchema).toMatchObject({
      type: "object",
      properties: { q: { type: "string", description: "What to look up" } },
    });
    expect(b && "inputSchema" in b && b.inputSchema).toBe(a && "inputSchema" in a && a.inputSchema);
  });

  it("stops at 12 steps with a plain reply", async () => {
    const loop: ToolProvider = async () => ({
      tools: { again: tool({ inputSchema: z.object({}), execute: async () => "more" }) },
    });
    const { model, calls } = scripted(() => callTool("again", {}));
    const outcome = await (await runTurn(request(model, [loop]))).done;
    expect(calls).toHaveLength(MAX_STEPS);
    expect(outcome.finish).toBe("step_limit");
    expect(outcome.text).toContain("12 steps");
  });

  it("reports a model that never answers as failed, costing nothing", async () => {
    const model = new MockLanguageModelV4({
      doStream: async () => {
        throw new Error("provider down");
      },
    });
    const outcome = await (await runTurn(request(model, []))).done;
    expect(outcome).toMatchObject({ finish: "failed", usage: { credits: 0 } });
  });
});

describe("credits and history", () => {
  it("costs max(1, ceil(tokens / 1000 × rate)) with rates 1, 2 and 5", () => {
    expect(turnCredits("fast", 10, 5)).toBe(1);
    expect(turnCredits("fast", 1500, 600)).toBe(3);
    expect(turnCredits("standard", 1500, 600)).toBe(5);
    expect(turnCredits("reasoning", 1500, 600)).toBe(11);
  });

  it("keeps the newest messages that fit the profile's budget, oldest first", () => {
    const long = "x".repeat(8_000);
    const history = Array.from({ length: 20 }, (_, i) => ({
      role: (i % 2 ? "assistant" : "user") as "user" | "assistant",
      content: `${i}:${long}`,
    }));
    const fast = boundedHistory("fast", history);
    const standard = boundedHistory("standard", history);
    expect(fast.length).toBeLessThan(standard.length);
    expect(standard.at(-1)).toEqual({ role: "assistant", content: `19:${long}` });
    expect(String(standard[0]!.content).startsWith(`${20 - standard.length}:`)).toBe(true);
  });
});
