import type { ModelMessage } from "ai";

/** How many tokens of earlier messages a turn sends, by runtime profile. */
const HISTORY_TOKENS: Readonly<Record<string, number>> = { fast: 4_000, standard: 16_000, reasoning: 24_000 };

/** A rough count (4 characters a token) that is cheap and errs on the high side for English. */
export const estimateTokens = (text: string) => Math.ceil(text.length / 4) + 4;

export type HistoryMessage = { role: "user" | "assistant"; content: string };

/** The newest messages (oldest first) that fit the profile's budget; older ones are left out. */
export function boundedHistory(profile: string, messages: readonly HistoryMessage[]): ModelMessage[] {
  let budget = HISTORY_TOKENS[profile] ?? HISTORY_TOKENS.standard!;
  const kept: ModelMessage[] = [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    budget -= estimateTokens(m.content);
    if (budget < 0) break;
    kept.push({ role: m.role, content: m.content });
  }
  return kept.reverse();
}
