import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import type { ImageModel, LanguageModel } from "ai";
import { createWorkersAI } from "workers-ai-provider";
import { effectiveModel } from "./models";

/** The Workers AI model used when no OpenAI-compatible endpoint is configured. */
export const WORKERS_AI_DEFAULT_MODEL = "@cf/meta/llama-3.3-70b-instruct-fp8-fast";

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

function openAiCompatibleChatModel(env: Env, modelId: string): LanguageModel {
  const { provider, chatModels } = openAiCompatible(env);
  let model = chatModels.get(modelId);
  if (!model) {
    model = provider.chatModel(modelId);
    if (chatModels.size >= 64) chatModels.clear();
    chatModels.set(modelId, model);
  }
  return model;
}

/**
 * The one place that turns configuration into an AI SDK model: an OpenAI-compatible
 * chat-completions endpoint (`LLM_BASE_URL`, `LLM_API_KEY`, `LLM_MODEL`), else the `AI`
 * binding, else null ("not configured"; callers answer with the status the spec gives).
 * `modelId` is a provider model id, used as given.
 */
export function languageModel(env: Env, modelId?: string | null): LanguageModel | null {
  if (env.LLM_BASE_URL) return openAiCompatibleChatModel(env, modelId || env.LLM_MODEL || "default");
  if (env.AI) {
    const workersAi = createWorkersAI({ binding: env.AI });
    return workersAi((modelId || env.LLM_MODEL || WORKERS_AI_DEFAULT_MODEL) as Parameters<typeof workersAi>[0]);
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
  if (!env.IMAGE_MODEL) return null;
  if (env.LLM_BASE_URL) return openAiCompatible(env).provider.imageModel(env.IMAGE_MODEL);
  if (env.AI) return createWorkersAI({ binding: env.AI }).image(env.IMAGE_MODEL);
  return null;
}
