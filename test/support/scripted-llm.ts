import { env } from "cloudflare:workers";
import { afterEach, vi } from "vitest";

/**
 * What the fake endpoint answers for one model step; `delayMs` holds the answer back that long,
 * `wordDelayMs` streams a text word by word with that pause between words.
 */
export type Turn = (
  | { tool: string; args?: Record<string, unknown> }
  | { text: string; wordDelayMs?: number }
  | { status: number }
) & {
  delayMs?: number;
};

export type ChatRequest = {
  model: string;
  messages: { role: string; content: unknown; tool_calls?: unknown[]; tool_call_id?: string }[];
  tools?: { type: string; function: { name: string } }[];
  stream?: boolean;
};

const USAGE = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };

/** The same answer as OpenAI streams it: chunks of `chat.completion.chunk`, usage last, then `[DONE]`. */
function streamed(
  id: string,
  model: string,
  turn: { tool: string; args?: Record<string, unknown> } | { text: string },
) {
  const chunk = (delta: object, finish: string | null, extra: object = {}) =>
    `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 0, model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
  const parts =
    "tool" in turn
      ? [
          chunk(
            {
              role: "assistant",
              tool_calls: [
                {
                  index: 0,
                  id: `call_${id}`,
                  type: "function",
                  function: { name: turn.tool, arguments: JSON.stringify(turn.args ?? {}) },
                },
              ],
            },
            null,
          ),
          chunk({}, "tool_calls", { usage: USAGE }),
        ]
      : [
          // In two pieces, so a reader sees the text arrive as deltas.
          chunk({ role: "assistant", content: turn.text.slice(0, Math.ceil(turn.text.length / 2)) }, null),
          chunk({ content: turn.text.slice(Math.ceil(turn.text.length / 2)) }, null),
          chunk({}, "stop", { usage: USAGE }),
        ];
  return new Response(`${parts.join("")}data: [DONE]\n\n`, { headers: { "Content-Type": "text/event-stream" } });
}

/** A text streamed a word at a time, as a slow model does; stops when the caller aborts. */
function slowlyStreamed(id: string, model: string, text: string, pauseMs: number, signal: AbortSignal) {
  const encoder = new TextEncoder();
  const chunk = (delta: object, finish: string | null, extra: object = {}) =>
    encoder.encode(
      `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 0, model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`,
    );
  const words = text.split(/(?<= )/);
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      for (const [i, word] of words.entries()) {
        if (signal.aborted) return controller.error(signal.reason);
        controller.enqueue(chunk(i === 0 ? { role: "assistant", content: word } : { content: word }, null));
        await new Promise((r) => setTimeout(r, pauseMs));
      }
      controller.enqueue(chunk({}, "stop", { usage: USAGE }));
      controller.enqueue(encoder.encode("data: [DONE]\n\n"));
      controller.close();
    },
  });
  return new Response(body, { headers: { "Content-Type": "text/event-stream" } });
}

const BASE = "https://llm.test/v1";

/**
 * A fake OpenAI-compatible chat-completions endpoint (the only service outside our system
 * an ask talks to). Points the Worker's `LLM_BASE_URL` at it and answers each request with
 * the next scripted turn (the last one repeats). The Worker runs in this isolate, so the
 * `fetch` spy sees its outbound calls; every other request passes through untouched.
 */
export function fakeLlm(...script: (Turn | ((req: ChatRequest) => Turn))[]) {
  const requests: ChatRequest[] = [];
  const original = globalThis.fetch;
  const vars = env as { LLM_BASE_URL?: string; LLM_MODEL?: string };
  vars.LLM_BASE_URL = BASE;
  vars.LLM_MODEL = "fake-model";
  const spy = vi.spyOn(globalThis, "fetch").mockImplementation(async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    if (!req.url.startsWith(BASE)) return original(input, init);
    if (req.url !== `${BASE}/chat/completions`) return new Response("not found", { status: 404 });
    const body = (await req.json()) as ChatRequest;
    requests.push(body);
    const entry = script[Math.min(requests.length - 1, script.length - 1)]!;
    const turn = typeof entry === "function" ? entry(body) : entry;
    if (turn.delayMs) await new Promise((r) => setTimeout(r, turn.delayMs));
    if ("status" in turn) return Response.json({ error: { message: "scripted failure" } }, { status: turn.status });
    if (body.stream && "text" in turn && turn.wordDelayMs)
      return slowlyStreamed(`${requests.length}`, body.model, turn.text, turn.wordDelayMs, req.signal);
    if (body.stream) return streamed(`${requests.length}`, body.model, turn);
    const message =
      "tool" in turn
        ? {
            role: "assistant",
            content: null,
            tool_calls: [
              {
                id: `call_${requests.length}`,
                type: "function",
                function: { name: turn.tool, arguments: JSON.stringify(turn.args ?? {}) },
              },
            ],
          }
        : { role: "assistant", content: turn.text };
    return Response.json({
      id: `chatcmpl-${requests.length}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      choices: [{ index: 0, message, finish_reason: "tool" in turn ? "tool_calls" : "stop" }],
      usage: USAGE,
    });
  });
  return {
    requests,
    restore() {
      spy.mockRestore();
      delete vars.LLM_BASE_URL;
      delete vars.LLM_MODEL;
    },
  };
}

/** The tool messages the model was sent in one request. */
export const toolMessages = (req: ChatRequest) => req.messages.filter((m) => m.role === "tool");

/**
 * One scripted model at a time for a test file: `script(...)` puts one in place (undoing the
 * one before), `current()` is the one in place, and it is undone after each test.
 */
export function scriptedModels() {
  let llm: ReturnType<typeof fakeLlm> | null = null;
  afterEach(() => {
    llm?.restore();
    llm = null;
  });
  return {
    script: (...turns: Parameters<typeof fakeLlm>) => {
      llm?.restore();
      llm = fakeLlm(...turns);
      return llm;
    },
    current: () => llm,
  };
}

/** A `MockLanguageModelV4` doGenerate result: the text, a stop, and small usage. */
export const mockTextReply = (text: string) => ({
  content: [{ type: "text" as const, text }],
  finishReason: { unified: "stop" as const, raw: "stop" },
  usage: {
    inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: 5, text: 5, reasoning: 0 },
  },
  warnings: [],
});
