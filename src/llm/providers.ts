import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { ImageModel, LanguageModel } from "ai";
import { createWorkersAI } from "workers-ai-provider";

/**
 * The provider packages behind `model.ts`, loaded with `import()` on a model's first call: they
 * build their response schemas when evaluated, which no request without a model call needs.
 */

type Provider = ReturnType<typeof createOpenAICompatible>;
/**
 * Providers kept per isolate, by endpoint and key, with their chat models by id: building a
 * provider or a model (its response schemas) per turn costs more than the turn's own work.
 */
const providers = new Map<string, { provider: Provider; chatModels: Map<string, LanguageModel> }>();

function openAiCompatible(env: Env) {
  const key = `${env.LLM_BASE_URL}\n${env.LLM_API_KEY ?? ""}`;
  let entry = providers.get(key);
  if (!entry) {
    const provider = createOpenAICompatible({
      name: "llm",
      baseURL: env.LLM_BASE_URL!.replace(/\/+$/, ""),
      apiKey: env.LLM_API_KEY,
      // Structured output (email triage, profile enrichment) as a JSON schema the provider enforces.
      supportsStructuredOutputs: true,
    });
    entry = { provider, chatModels: new Map() };
    if (providers.size >= 8) providers.clear();
    providers.set(key, entry);
  }
  return entry;
}

export function openAiCompatibleChatModel(env: Env, modelId: string): LanguageModel {
  const { provider, chatModels } = openAiCompatible(env);
  let model = chatModels.get(modelId);
  if (!model) {
    model = provider.chatModel(modelId);
    if (chatModels.size >= 64) chatModels.clear();
    chatModels.set(modelId, model);
  }
  return model;
}

export const openAiCompatibleImageModel = (env: Env, modelId: string): ImageModel =>
  openAiCompatible(env).provider.imageModel(modelId);

export function workersAiChatModel(ai: Ai, modelId: string): LanguageModel {
  const workersAi = createWorkersAI({ binding: ai });
  return workersAi(modelId as Parameters<typeof workersAi>[0]);
}

export const workersAiImageModel = (ai: Ai, modelId: string): ImageModel =>
  createWorkersAI({ binding: ai }).image(modelId);
