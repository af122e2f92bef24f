import type { MockLanguageModelV4 } from "ai/test";

/** What an AI SDK mock model's `doGenerate` receives and answers. */
export type CallOptions = Parameters<MockLanguageModelV4["doGenerate"]>[0];
export type GenerateResult = Awaited<ReturnType<MockLanguageModelV4["doGenerate"]>>;

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

/** A mock model step that calls one tool. */
export const toolCall = (toolName: string, input: object, toolCallId = crypto.randomUUID()): GenerateResult => ({
  content: [{ type: "tool-call", toolCallId, toolName, input: JSON.stringify(input) }],
  finishReason: { unified: "tool-calls", raw: undefined },
  usage,
  warnings: [],
});

/** A mock model step that answers with text and stops. */
export const answer = (text: string): GenerateResult => ({
  content: [{ type: "text", text }],
  finishReason: { unified: "stop", raw: undefined },
  usage,
  warnings: [],
});

/** The tool results the model was sent back. */
export const toolResults = (options: CallOptions) =>
  options.prompt.flatMap((m) => (m.role === "tool" ? m.content.filter((p) => p.type === "tool-result") : []));
