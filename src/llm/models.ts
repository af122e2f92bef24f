/**
 * Runtime profiles and the models each offers. An agent's `model` must belong to its
 * `runtime_profile`; a null `model` means the profile's platform default.
 *
 * Model slugs are the public names; `workersAi` is the id on the Workers AI binding. On an
 * OpenAI-compatible endpoint the slug is sent as the model id, and an agent without a
 * model uses `LLM_MODEL` (the operator's choice for that endpoint) before the profile default.
 */
export type ModelInfo = { slug: string; workersAi: string; description: string };
export type RuntimeProfile = { slug: string; description: string; defaultModel: string; models: readonly ModelInfo[] };

const MODELS = {
  "gpt-oss-120b": {
    slug: "gpt-oss-120b",
    workersAi: "@cf/openai/gpt-oss-120b",
    description: "Open-weight general model with strong tool use",
  },
  "gpt-oss-20b": {
    slug: "gpt-oss-20b",
    workersAi: "@cf/openai/gpt-oss-20b",
    description: "Smaller, faster open-weight general model",
  },
  "llama-3.3-70b": {
    slug: "llama-3.3-70b",
    workersAi: "@cf/meta/llama-3.3-70b-instruct-fp8-fast",
    description: "Meta Llama 3.3 70B instruct",
  },
  "llama-3.1-8b": {
    slug: "llama-3.1-8b",
    workersAi: "@cf/meta/llama-3.1-8b-instruct-fast",
    description: "Meta Llama 3.1 8B instruct, lowest latency",
  },
  "qwen3-30b": {
    slug: "qwen3-30b",
    workersAi: "@cf/qwen/qwen3-30b-a3b-fp8",
    description: "Qwen3 30B mixture-of-experts",
  },
  "deepseek-r1-32b": {
    slug: "deepseek-r1-32b",
    workersAi: "@cf/deepseek-ai/deepseek-r1-distill-qwen-32b",
    description: "DeepSeek R1 distilled reasoning model",
  },
  "qwq-32b": { slug: "qwq-32b", workersAi: "@cf/qwen/qwq-32b", description: "Qwen QwQ reasoning model" },
} as const satisfies Record<string, ModelInfo>;

export const RUNTIME_PROFILES: Readonly<Record<string, RuntimeProfile>> = {
  standard: {
    slug: "standard",
    description: "General chat and tool use",
    defaultModel: "gpt-oss-120b",
    models: [MODELS["gpt-oss-120b"], MODELS["llama-3.3-70b"], MODELS["qwen3-30b"]],
  },
  fast: {
    slug: "fast",
    description: "Short answers at the lowest latency",
    defaultModel: "gpt-oss-20b",
    models: [MODELS["gpt-oss-20b"], MODELS["llama-3.1-8b"]],
  },
  reasoning: {
    slug: "reasoning",
    description: "Multi-step analysis; slower, thinks before answering",
    defaultModel: "deepseek-r1-32b",
    models: [MODELS["deepseek-r1-32b"], MODELS["qwq-32b"], MODELS["gpt-oss-120b"]],
  },
};

export const RUNTIME_PROFILE_SLUGS = Object.keys(RUNTIME_PROFILES);

export const isRuntimeProfile = (slug: string): boolean => Object.hasOwn(RUNTIME_PROFILES, slug);

export function modelBelongsTo(profile: string, model: string): boolean {
  return RUNTIME_PROFILES[profile]?.models.some((m) => m.slug === model) ?? false;
}

/** The model an agent runs on: its own, else its profile's default. */
export function effectiveModel(profile: string, model: string | null | undefined): ModelInfo {
  const p = RUNTIME_PROFILES[profile] ?? RUNTIME_PROFILES.standard!;
  const slug = model && modelBelongsTo(p.slug, model) ? model : p.defaultModel;
  return p.models.find((m) => m.slug === slug) ?? p.models[0]!;
}

/** A one-line description of the profile table, for the OpenAPI document. */
export function describeRuntimeProfiles(): string {
  return Object.values(RUNTIME_PROFILES)
    .map(
      (p) =>
        `\`${p.slug}\` (${p.description}): ${p.models.map((m) => `\`${m.slug}\``).join(", ")}; default \`${p.defaultModel}\``,
    )
    .join(". ");
}
