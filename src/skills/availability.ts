import type { ImageModel, LanguageModel } from "ai";
import { imageModel, languageModel } from "../llm/model";

/**
 * Whether a catalogue skill can run in this deployment, and why not. The one rule both the
 * catalogue (its `available` / `unavailable_reason`) and the turn's tool provider follow:
 * a skill whose configuration is missing is listed as unavailable and offers no tool.
 */

/** Where the skills get their models; the configured ones unless a caller (a test) says otherwise. */
export type ModelSource = {
  language(env: Env): LanguageModel | null;
  image(env: Env): ImageModel | null;
};

export const CONFIGURED_MODELS: ModelSource = { language: (env) => languageModel(env), image: imageModel };

export type SkillStatus = { available: boolean; unavailable_reason: string | null };

const available: SkillStatus = { available: true, unavailable_reason: null };
const unavailable = (reason: string): SkillStatus => ({ available: false, unavailable_reason: reason });

export const searchConfigured = (env: Env) => Boolean(env.SEARCH_API_URL && env.SEARCH_API_KEY);

const NO_SEARCH = "No web-search provider is configured (SEARCH_API_URL and SEARCH_API_KEY).";

export function skillStatus(env: Env, slug: string, models: ModelSource = CONFIGURED_MODELS): SkillStatus {
  switch (slug) {
    case "web-search":
      return searchConfigured(env) ? available : unavailable(NO_SEARCH);
    case "web-reader":
    case "document-reader":
      return available;
    case "image-generation":
      return models.image(env)
        ? available
        : unavailable("No image model is configured (IMAGE_MODEL with LLM_BASE_URL or the AI binding).");
    case "deep-research":
      if (!models.language(env))
        return unavailable("No language model is configured (LLM_BASE_URL or the AI binding).");
      return searchConfigured(env) ? available : unavailable(NO_SEARCH);
    case "code-interpreter":
      return unavailable("Running code needs a sandbox this deployment does not have.");
    default:
      return unavailable("This deployment has no tool for this skill.");
  }
}
