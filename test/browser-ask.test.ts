import { env } from "cloudflare:workers";
import { MockLanguageModelV4 } from "ai/test";
import { describe, expect, it } from "vitest";
import { METHODS } from "../durable-objects/protocol";
import { PAT_KIND, resolveBearer } from "../src/auth/resolve";
import { askBrowser } from "../src/browser/service";
import { type BrowserTurn, computerTools } from "../src/browser/tools";
import { connectExtension, TINY_PNG } from "./support/browser";
import { answer, type CallOptions, type GenerateResult, toolCall, toolResults } from "./support/mock-model";
import { signupWorkspace } from "./support/seed";

// The ask service tested directly with an AI SDK mock model (the routes test drives the
// same service over HTTP with a fake OpenAI-compatible endpoint).

function scripted(...steps: ((options: CallOptions) => GenerateResult)[]) {
  let n = 0;
  return new MockLanguageModelV4({ doGenerate: async (options) => steps[Math.min(n++, steps.length - 1)]!(options) });
}

async function connected() {
  const ws = await signupWorkspace();
  const ext = await connectExtension(ws.adminToken);
  const resolved = await resolveBearer(env, [PAT_KIND], ws.adminToken);
  return { ws, ext, caller: resolved!.caller };
}

describe("askBrowser with a mock model", () => {
  it("calls computer_screenshot, delivers the frame to the socket, returns the image to the model and its answer to the caller", async () => {
    const { ext, caller } = await connected();
    const model = scripted(
      () => toolCall("computer_screenshot", {}, "shot-1"),
      (options) => {
        const [result] = toolResults(options);
        return answer(JSON.stringify(result?.output).includes(TINY_PNG) ? "A blank page." : "No image.");
      },
    );

    const pending = askBrowser(env, caller, { prompt: "What do you see?" }, { model: () => model });
    const frame = await ext.next();
    expect(frame).toEqual({ id: 1, method: "computer.screenshot", params: {} });
    ext.succeed(frame.id!, { data: TINY_PNG });
    const outcome = await pending;

    expect(outcome).toMatchObject({
      reply: "A blank page.",
      steps: 2,
      finish: "answered",
      methods: ["computer.screenshot"],
    });
    expect(model.doGenerateCalls).toHaveLength(2);
    const offered = (model.doGenerateCalls[0]!.tools ?? []).map((t) => t.name).sort();
    expect(offered).toEqual(METHODS.map((m) => m.replace(".", "_")).sort());
    expect(offered.every((n) => n.startsWith("computer_"))).toBe(true);
    const [result] = toolResults(model.doGenerateCalls[1]!);
    expect(result).toMatchObject({ toolCallId: "shot-1", toolName: "computer_screenshot" });
    expect(result!.output).toEqual({
      type: "content",
      value: [{ type: "file", mediaType: "image/png", data: { type: "data", data: TINY_PNG } }],
    });
  });

  it("shows the model its own invalid tool input as an error, without sending a command", async () => {
    const { ext, caller } = await connected();
    const model = scripted(
      () => toolCall("computer_navigate", { url: "file:///etc/passwd" }),
      (options) => answer(JSON.stringify(options.prompt).includes("error") ? "I cannot open that." : "opened"),
    );
    const outcome = await askBrowser(env, caller, { prompt: "open a file" }, { model: () => model });
    expect(outcome).toMatchObject({ reply: "I cannot open that.", steps: 2, finish: "answered", methods: [] });
    expect(ext.backlog).toBe(0);
  });

  it("truncates very long page text before it reaches the model", async () => {
    const { ext, caller } = await connected();
    const model = scripted(
      () => toolCall("computer_read", {}),
      (options) => {
        const output = toolResults(options)[0]!.output as { type: "json"; value: { text: string; truncated: boolean } };
        return answer(`${output.value.text.length} ${output.value.truncated}`);
      },
    );
    const pending = askBrowser(env, caller, { prompt: "read" }, { model: () => model });
    const frame = await ext.next();
    ext.succeed(frame.id!, { text: "z".repeat(60_000) });
    expect((await pending).reply).toBe("50000 true");
  });

  it("answers 503 when no model is configured", async () => {
    const { caller } = await connected();
    await expect(askBrowser(env, caller, { prompt: "hi" }, { model: () => null })).rejects.toMatchObject({
      status: 503,
      code: "model_not_configured",
    });
  });
});

describe("computer tools", () => {
  it("exist only for a browser-session turn holding svc:computer", () => {
    const run = async () => ({ ok: true as const, result: {} });
    expect(() => computerTools({ browserSession: true, scopes: new Set(["agents:read"]) }, run)).toThrow(
      /svc:computer/,
    );
    expect(() =>
      computerTools({ browserSession: false, scopes: new Set(["svc:computer"]) } as unknown as BrowserTurn, run),
    ).toThrow();
    const tools = computerTools({ browserSession: true, scopes: new Set(["svc:computer"]) }, run);
    expect(Object.keys(tools).sort()).toEqual(METHODS.map((m) => m.replace(".", "_")).sort());
  });
});
