import { generateText, type LanguageModel, Output } from "ai";
import { z } from "zod";
import { logWarning } from "../platform/log";

export const SIZE_HINTS = ["1-10", "11-50", "51-200", "201-1000", "1000+"] as const;
export type SizeHint = (typeof SIZE_HINTS)[number];

export type Enrichment = { industry: string | null; segment: string | null; size_hint: SizeHint | null };
export const NO_ENRICHMENT: Enrichment = { industry: null, segment: null, size_hint: null };

const EnrichmentOutputSchema = z.object({
  industry: z.string().max(100).nullable().describe("The business's industry in a few words, e.g. 'Bakery'"),
  segment: z.string().max(100).nullable().describe("Whom it sells to, e.g. 'B2C local', 'B2B SaaS', 'E-commerce'"),
  size_hint: z.enum(SIZE_HINTS).nullable().describe("Headcount range, null when the page gives no clue"),
});

export const ENRICHMENT_SYSTEM_PROMPT =
  "You classify a business from its website. Answer only from the page text you are given; " +
  "use null for anything the page does not support. Never invent facts.";

export type EnrichmentInput = {
  domain: string;
  summary: string | null;
  text: string;
  technologies: readonly string[];
};

/**
 * Industry, segment and size hint through the model's structured output. A model that fails
 * or answers outside the schema leaves the enrichment empty: the crawl itself still counts.
 */
export async function enrich(model: LanguageModel, input: EnrichmentInput, signal?: AbortSignal): Promise<Enrichment> {
  const prompt = [
    `Domain: ${input.domain}`,
    input.summary ? `Summary: ${input.summary}` : null,
    input.technologies.length ? `Technologies: ${input.technologies.join(", ")}` : null,
    "Page text:",
    input.text,
  ]
    .filter((l) => l !== null)
    .join("\n");
  try {
    const { output } = await generateText({
      model,
      system: ENRICHMENT_SYSTEM_PROMPT,
      prompt,
      output: Output.object({ schema: EnrichmentOutputSchema }),
      maxRetries: 1,
      abortSignal: signal,
    });
    const clip = (s: string | null) => (s?.trim() ? s.trim().slice(0, 100) : null);
    return { industry: clip(output.industry), segment: clip(output.segment), size_hint: output.size_hint };
  } catch (error) {
    logWarning("profile enrichment failed", error);
    return NO_ENRICHMENT;
  }
}
