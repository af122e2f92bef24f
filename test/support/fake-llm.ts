import { HttpResponse, http } from "msw";
import { setupServer } from "msw/node";

/**
 * A fake OpenAI-compatible provider (MSW, in the Worker's isolate) answering
 * `/chat/completions`, `/images/generations` and `GET /models` the way OpenAI does, and recording
 * what it was sent. Pair it with `callWith(LLM_ENV, ...)`, which runs the Worker with the provider
 * configured; the shared test env has no provider, so plain `call` sees "not configured".
 */
export const LLM_BASE_URL = "https://llm.test/v1";
export const LLM_ENV = {
  LLM_BASE_URL,
  LLM_API_KEY: "sk-test-provider-key",
  LLM_MODEL: "test-chat-model",
  IMAGE_MODEL: "test-image-model",
};

export type Recorded = { path: string; headers: Headers; body: Record<string, unknown> };

/**
 * The models the fake provider lists at `GET /models`. The service keeps a provider's list for
 * minutes per isolate, so a test needing another list points `LLM_BASE_URL` elsewhere.
 */
export const PROVIDER_MODELS = ["test-chat-model", "gpt-oss-120b", "llama-3.3-70b"] as const;

export const fakeLlm = {
  requests: [] as Recorded[],
  /** What the next chat completion answers with; a number is an HTTP error status. */
  chatReply: "You are the assistant." as string | number,
  /** What the next image generation answers with: base64 image bytes, or an HTTP error status. */
  imageB64: "" as string | number,
  reset() {
    this.requests = [];
    this.chatReply = "You are the assistant.";
    this.imageB64 = "";
  },
};

async function record(path: string, request: { headers: Headers; json(): Promise<unknown> }) {
  fakeLlm.requests.push({ path, headers: request.headers, body: (await request.json()) as Record<string, unknown> });
}

const providerError = (status: number) =>
  HttpResponse.json({ error: { message: "The server had an error", type: "server_error", code: null } }, { status });

export const llmServer = setupServer(
  http.post(`${LLM_BASE_URL}/chat/completions`, async ({ request }) => {
    await record("/chat/completions", request);
    if (typeof fakeLlm.chatReply === "number") return providerError(fakeLlm.chatReply);
    return HttpResponse.json({
      id: "chatcmpl-test",
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: "test-chat-model",
      choices: [{ index: 0, message: { role: "assistant", content: fakeLlm.chatReply }, finish_reason: "stop" }],
      usage: { prompt_tokens: 120, completion_tokens: 80, total_tokens: 200 },
    });
  }),
  http.get(`${LLM_BASE_URL}/models`, ({ request }) => {
    fakeLlm.requests.push({ path: "/models", headers: request.headers, body: {} });
    return HttpResponse.json({
      object: "list",
      data: PROVIDER_MODELS.map((id) => ({ id, object: "model", created: 1_700_000_000, owned_by: "fake-provider" })),
    });
  }),
  http.post(`${LLM_BASE_URL}/images/generations`, async ({ request }) => {
    await record("/images/generations", request);
    if (typeof fakeLlm.imageB64 === "number") return providerError(fakeLlm.imageB64);
    return HttpResponse.json({ created: Math.floor(Date.now() / 1000), data: [{ b64_json: fakeLlm.imageB64 }] });
  }),
);

export { callWith } from "./app";
