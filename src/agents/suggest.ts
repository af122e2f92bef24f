import { generateText, type LanguageModel } from "ai";
import { requestCallLimits } from "../llm/model";
import { logError } from "../platform/log";
import { ApiError } from "../platform/problem";
import type { BusinessProfileFacts } from "../profile/service";
import type { AgentRow } from "./schemas";

/**
 * Drafting an agent's instructions with a language model. Privacy guards: the model sees
 * only the workspace's public business facts and the agent's own settings (never members,
 * conversations, tokens or other agents), and free text is scrubbed of anything that looks
 * like a credential or contact detail before it leaves.
 */

export type SuggestionInput = {
  agent: AgentRow;
  workspaceName: string;
  profile: BusinessProfileFacts | null;
  /** Names of the skills the agent can use. */
  skills: readonly string[];
};

const REDACTIONS: readonly [RegExp, string][] = [
  // credentials in URLs
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@:]+:[^\s/@]+@/gi, "$1[redacted]@"],
  // well-known token shapes (this service's, cloud providers', chat and code hosts')
  [
    /\b(?:svc_[a-z]+_|sk-|sk_live_|sk_test_|rk_live_|ghp_|gho_|ghs_|github_pat_|glpat-|xox[abprs]-|AKIA|ASIA|AIza)[A-Za-z0-9_-]{8,}/g,
    "[redacted]",
  ],
  [/\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, "[redacted]"],
  [/-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g, "[redacted]"],
  // long random-looking strings (keys, hashes) with both letters and digits
  [/\b(?=[A-Za-z0-9+/_=-]*\d)(?=[A-Za-z0-9+/_=-]*[A-Za-z])[A-Za-z0-9+/_=-]{32,}/g, "[redacted]"],
  // contact details
  [/[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g, "[email]"],
];

// Digit runs with phone punctuation; only those with 9 or more digits count (dates and years do not).
const PHONE_CANDIDATE = /(?<![\w+])\+?\(?\d[\d\s().-]{6,}\d(?![\w])/g;

/** Removes credentials and contact details from text bound for the model. */
export function redactForModel(text: string): string {
  const scrubbed = REDACTIONS.reduce((t, [pattern, replacement]) => t.replace(pattern, replacement), text);
  return scrubbed.replace(PHONE_CANDIDATE, (m) => (m.replace(/\D/g, "").length >= 9 ? "[phone]" : m));
}

export const SUGGESTION_SYSTEM_PROMPT =
  "You write system prompts for AI agents that work inside a company's team workspace. " +
  "From the facts given, write the instructions this agent should follow: who it is, whom it serves, " +
  "what it should help with, how it should work and what it must not do. Write in the second person " +
  '("You are ..."), 120 to 300 words, plain text without headings, placeholders or markdown fences. ' +
  "Do not invent facts about the company beyond the ones given. Do not include names of people, email " +
  "addresses, phone numbers, credentials or URLs other than the company domain. Output only the prompt.";

const line = (label: string, value: string | null | undefined) => (value ? `${label}: ${redactForModel(value)}` : null);

/** The facts the model sees, one per line. */
export function suggestionPrompt(input: SuggestionInput): string {
  const { agent, profile } = input;
  const facts = [
    "About the company:",
    line("Workspace name", input.workspaceName),
    line("Website domain", profile?.domain),
    line("Summary", profile?.summary),
    line("Industry", profile?.industry),
    line("Segment", profile?.segment),
    line("Size", profile?.size_hint),
    profile?.technologies?.length ? line("Technologies in use", profile.technologies.slice(0, 15).join(", ")) : null,
    profile ? null : "(no business profile is available; keep company-specific claims general)",
    "",
    "About the agent:",
    line("Name", agent.display_name),
    line("Handle", `@${agent.slug}`),
    line("Role description", agent.description),
    // Seeded platform text says nothing about this agent's role; the admin's own text does.
    agent.instructions && !agent.instructions_is_default ? line("Current instructions", agent.instructions) : null,
    line("Tone", agent.tone),
    line("Verbosity", agent.verbosity),
    agent.languages.length ? line("Languages", agent.languages.join(", ")) : null,
    agent.cautions.length ? line("Things to avoid", agent.cautions.join("; ")) : null,
    input.skills.length ? line("Skills it can use", input.skills.join(", ")) : null,
  ];
  return facts.filter((f): f is string => f !== null).join("\n");
}

/** Strips what models wrap drafts in despite being told not to. */
function cleanDraft(text: string): string {
  return text
    .trim()
    .replace(/^```[a-z]*\n([\s\S]*?)\n```$/i, "$1")
    .trim()
    .slice(0, 20_000);
}

export async function draftInstructions(
  model: LanguageModel,
  input: SuggestionInput,
  signal?: AbortSignal,
): Promise<string> {
  let text: string;
  try {
    const result = await generateText({
      model,
      system: SUGGESTION_SYSTEM_PROMPT,
      prompt: suggestionPrompt(input),
      ...requestCallLimits(signal),
    });
    text = cleanDraft(result.text);
  } catch (e) {
    logError("instruction suggestion failed", e);
    throw new ApiError(500, "suggestion_failed", "The language model did not produce a draft");
  }
  if (!text) throw new ApiError(500, "suggestion_failed", "The language model returned an empty draft");
  return text;
}
