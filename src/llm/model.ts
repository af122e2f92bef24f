import type { ImageModel, LanguageModel } from "ai";
import { effectiveModel } from "./models";

/** The Workers AI model used when no OpenAI-compatible endpoint is configured. */
export const WORKERS_AI_DEFAULT_MODEL = "@cf/meta/llama-3.3-70b-instruct-fp8-fast";

const loadProviders = () => import("./providers");

/** A model call a request waits for: one retry, and 60 s unless the caller brings its own signal. */
export const requestCallLimits = (signal?: AbortSignal) => ({
  maxRetries: 1,
  abortSignal: signal ?? AbortSignal.timeout(60_000),
});

/** The endpoint's chat models kept per isolate, by endpoint, key and model id (see `providers.ts`). */
const chatModels = new Map<string, LanguageModel>();

type ChatModel = Extract<LanguageModel, { specificationVersion: "v4" }>;
type ImageGenerator = Extract<ImageModel, { specificationVersion: "v4" }>;

/**
 * A model that loads its provider package on its first call (see `providers.ts`): the startup
 * of an isolate, and every request that calls no model, skip evaluating it. `provider` and
 * `modelId` are the loaded model's own.
 */
function deferredChatModel(provider: string, modelId: string, load: () => Promise<LanguageModel>): ChatModel {
  let loaded: Promise<ChatModel> | undefined;
  const model = () => (loaded ??= load().then((m) => m as ChatModel));
  return {
    specificationVersion: "v4",
    provider,
    modelId,
    get supportedUrls() {
      return model().then((m) => m.supportedUrls);
    },
    doGenerate: async (options) => (await model()).doGenerate(options),
    doStream: async (options) => (await model()).doStream(options),
  };
}

function deferredImageModel(provider: string, modelId: string, load: () => Promise<ImageModel>): ImageGenerator {
  let loaded: Promise<ImageGenerator> | undefined;
  const model = () => (loaded ??= load().then((m) => m as ImageGenerator));
  return {
    specificationVersion: "v4",
    provider,
    modelId,
    maxImagesPerCall: async () => {
      const m = await model();
      return typeof m.maxImagesPerCall === "function" ? m.maxImagesPerCall({ modelId }) : m.maxImagesPerCall;
    },
    doGenerate: async (options) => (await model()).doGenerate(options),
  };
}

/**
 * The one place that turns configuration into an AI SDK model: an OpenAI-compatible
 * chat-completions endpoint (`LLM_BASE_URL`, `LLM_API_KEY`, `LLM_MODEL`), else the `AI`
 * binding, else null ("not configured"; callers answer with the status the spec gives).
 * `modelId` is a provider model id, used as given.
 */
export function languageModel(env: Env, modelId?: string | null): LanguageModel | null {
  if (env.LLM_BASE_URL) {
    const id = modelId || env.LLM_MODEL || "default";
    const key = `${env.LLM_BASE_URL}\n${env.LLM_API_KEY ?? ""}\n${id}`;
    let model = chatModels.get(key);
    if (!model) {
      model = deferredChatModel("llm.chat", id, async () => (await loadProviders()).openAiCompatibleChatModel(env, id));
      if (chatModels.size >= 256) chatModels.clear();
      chatModels.set(key, model);
    }
    return model;
  }
  const ai = env.AI;
  if (ai) {
    const id = modelId || env.LLM_MODEL || WORKERS_AI_DEFAULT_MODEL;
    return deferredChatModel("workersai.chat", id, async () => (await loadProviders()).workersAiChatModel(ai, id));
  }
  return null;
}

/**
 * The model an agent runs on, mapped from its `runtime_profile` and `model` to the
 * configured provider's id (see `models.ts`), or null when no provider is configured.
 */
export function agentLanguageModel(
  env: Env,
  agent: { runtime_profile: string; model?: string | null },
): LanguageModel | null {
  if (env.LLM_BASE_URL) {
    // The endpoint's own model names are the operator's business: an agent without a
    // model pin uses LLM_MODEL when set.
    const id = agent.model || env.LLM_MODEL || effectiveModel(agent.runtime_profile, null).slug;
    return languageModel(env, id);
  }
  if (env.AI) return languageModel(env, effectiveModel(agent.runtime_profile, agent.model).workersAi);
  return null;
}

/**
 * The image model for avatar generation: `IMAGE_MODEL` on the OpenAI-compatible endpoint
 * (`/images/generations`), else `IMAGE_MODEL` on the `AI` binding; null when `IMAGE_MODEL`
 * or both providers are unset.
 */
export function imageModel(env: Env): ImageModel | null {
  const id = env.IMAGE_MODEL;
  if (!id) return null;
  if (env.LLM_BASE_URL)
    return deferredImageModel("llm.image", id, async () => (await loadProviders()).openAiCompatibleImageModel(env, id));
  const ai = env.AI;
  if (ai)
    return deferredImageModel("workersai.image", id, async () => (await loadProviders()).workersAiImageModel(ai, id));
  return null;
}
