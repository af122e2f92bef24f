/** Credits per 1 000 tokens, by runtime profile. */
const RATES: Readonly<Record<string, number>> = { fast: 1, standard: 2, reasoning: 5 };

/** What a turn costs: `max(1, ceil((input + output) / 1000 × rate))`. */
export function turnCredits(profile: string, inputTokens: number, outputTokens: number): number {
  const rate = RATES[profile] ?? RATES.standard!;
  return Math.max(1, Math.ceil(((inputTokens + outputTokens) / 1000) * rate));
}
