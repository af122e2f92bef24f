import { readUIMessageStream, type TextStreamPart, type ToolSet, toUIMessageStream, type UIMessageChunk } from "ai";
import { describe, expect, it } from "vitest";
import { partsOf, textOnlyParts } from "../src/conversations/room/parts";
import { uiChunkMapper } from "../src/conversations/room/ui-chunks";

// The room maps streamText's parts to UI message chunks itself and builds a text reply's parts
// in one pass; both must give what the AI SDK's own `toUIMessageStream` and
// `readUIMessageStream` give, since clients rebuild the message from these chunks ("the AI SDK
// UI message stream protocol") and the stored reply is what GET shows.

const streamOf = <T>(items: readonly T[]) =>
  new ReadableStream<T>({
    start(controller) {
      for (const i of items) controller.enqueue(i);
      controller.close();
    },
  });

async function collect<T>(stream: ReadableStream<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of stream as unknown as AsyncIterable<T>) out.push(item);
  return out;
}

async function sdkParts(chunks: UIMessageChunk[]) {
  let last: { parts: unknown[] } | undefined;
  for await (const m of readUIMessageStream({ stream: streamOf(chunks), onError: () => undefined })) last = m;
  return last?.parts ?? [];
}

const meta = { llm: { cached: true } };
const usage = { inputTokens: 3, outputTokens: 5, totalTokens: 8 };

/** A reply of two steps: a tool call the model got wrong (its error), then text. */
const parts = [
  { type: "start" },
  { type: "start-step", request: {}, warnings: [] },
  { type: "text-start", id: "a" },
  { type: "text-delta", id: "a", text: "Let me " },
  { type: "text-delta", id: "a", text: "look.", providerMetadata: meta },
  { type: "text-end", id: "a" },
  {
    type: "tool-call",
    toolCallId: "c1",
    toolName: "missing_tool",
    input: {},
    invalid: true,
    error: new Error("no such tool"),
  },
  { type: "tool-error", toolCallId: "c1", toolName: "missing_tool", input: {}, error: new Error("no such tool") },
  { type: "finish-step", finishReason: "tool-calls", usage, response: {}, providerMetadata: undefined },
  { type: "start-step", request: {}, warnings: [] },
  { type: "text-start", id: "b" },
  { type: "text-delta", id: "b", text: "Done." },
  { type: "text-end", id: "b" },
  { type: "finish-step", finishReason: "stop", usage, response: {}, providerMetadata: undefined },
  { type: "finish", finishReason: "stop", totalUsage: usage },
] as unknown as TextStreamPart<ToolSet>[];

describe("a turn's UI message chunks, mapped in the room", () => {
  it("are the chunks toUIMessageStream sends for the same parts (the reply's id on start, an invalid call's error once)", async () => {
    const onError = (e: unknown) => `failed: ${(e as Error).message}`;
    const expected = await collect(
      toUIMessageStream({
        stream: streamOf(parts),
        tools: {},
        generateMessageId: () => "turn-1",
        onError,
        redactToolErrors: false,
      }),
    );
    const map = uiChunkMapper({}, { messageId: "turn-1", onError });
    const mapped = parts.map(map).filter((c) => c !== undefined);
    expect(mapped).toEqual(expected);
    expect(mapped[0]).toEqual({ type: "start", messageId: "turn-1" });
    expect(mapped.filter((c) => c.type === "tool-input-error" || c.type === "tool-output-error")).toHaveLength(1);
  });
});

describe("a reply's parts, built from its chunks", () => {
  const textChunks: UIMessageChunk[] = [
    { type: "start", messageId: "turn-1" },
    { type: "start-step" },
    { type: "text-start", id: "a" },
    { type: "text-delta", id: "a", delta: "Hello" },
    { type: "text-delta", id: "a", delta: ", there", providerMetadata: meta },
    { type: "text-end", id: "a" },
    { type: "finish-step" },
    { type: "start-step" },
    { type: "text-start", id: "b", providerMetadata: meta },
    { type: "text-delta", id: "b", delta: "Again." },
    { type: "finish", finishReason: "stop" },
  ];

  it("for a reply of text alone, in one pass: the parts readUIMessageStream builds (a part still open stays streaming)", async () => {
    const fast = textOnlyParts(textChunks);
    expect(fast).not.toBeNull();
    expect(JSON.parse(JSON.stringify(fast))).toEqual(JSON.parse(JSON.stringify(await sdkParts(textChunks))));
    expect(fast?.map((p) => p.type)).toEqual(["step-start", "text", "step-start", "text"]);
  });

  it("with a tool, reasoning or an error, through the SDK's reader", async () => {
    const withTool: UIMessageChunk[] = [
      { type: "start", messageId: "turn-1" },
      { type: "start-step" },
      { type: "tool-input-available", toolCallId: "c1", toolName: "search", input: { q: "x" } },
      { type: "tool-output-available", toolCallId: "c1", output: { hits: 1 } },
      { type: "finish-step" },
      { type: "finish", finishReason: "stop" },
    ];
    const withError: UIMessageChunk[] = [...textChunks.slice(0, 4), { type: "error", errorText: "cut" }];
    for (const chunks of [withTool, withError]) {
      expect(textOnlyParts(chunks)).toBeNull();
      expect(await partsOf(chunks)).toEqual(await sdkParts(chunks));
    }
    expect((await partsOf(withTool)).map((p) => p.type)).toEqual(["step-start", "tool-search"]);
  });
});
