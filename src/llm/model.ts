import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { LanguageModel } from "ai";
import { createWorkersAI } from "workers-ai-provider";

/** The Workers AI model used when no OpenAI-compatible endpoint is configured. */
export const WORKERS_AI_DEFAULT_MODEL = "@cf/meta/llama-3.3-70b-instruct-fp8-fast";

/**
 * The one place that turns configuration into an AI SDK model: an OpenAI-compatible
 * chat-completions endpoint (`LLM_BASE_URL`, `LLM_API_KEY`, `LLM_MODEL`), else the `AI`
 * binding, else null ("not configured"; callers answer with the status the spec gives).
 */
export function languageModel(env: Env, modelId?: string | null): LanguageModel | null {
  if (env.LLM_BASE_URL) {
    const provider = createOpenAICompatible({ name: "llm", baseURL: env.LLM_BASE_URL, apiKey: env.LLM_API_KEY });
    return provider.chatModel(modelId || env.LLM_MODEL || "default");
  }
  if (env.AI) {
    const workersAi = createWorkersAI({ binding: env.AI });
    return workersAi((modelId || env.LLM_MODEL || WORKERS_AI_DEFAULT_MODEL) as Parameters<typeof workersAi>[0]);
  }
  return null;
}
