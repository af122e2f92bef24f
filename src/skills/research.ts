import { generateText, isStepCount, type LanguageModel, tool } from "ai";
import { z } from "zod";
import { logError } from "../platform/log";
import type { TurnScope } from "../platform/turn-tools";
import { clip } from "./extract";
import { nameStem, storeProduced } from "./produced";
import { readUrl } from "./reader";
import { webSearch } from "./search";

/** Model steps of one research run; the last one writes the report, with no tools. */
export const RESEARCH_STEPS = 8;
/** Page text one reading hands the sub-loop (several pages must fit its context). */
export const RESEARCH_PAGE_LIMIT = 8_000;

export const RESEARCH_PROMPT = [
  "You are a careful research assistant. Investigate the question with the tools: search the web,",
  "then read the most relevant pages (prefer primary and recent sources). When you know enough, or",
  "when told to, write the report in Markdown: a one-paragraph answer first, then the findings under",
  "headings, citing each claim with a link to the page it came from. Say plainly what you could not",
  "establish. Do not invent sources.",
].join(" ");

export type ResearchOutcome = { artifact_id: string; download_url: string; summary: string };

/** The first paragraph of the report that is not a heading, at most 500 characters. */
export function summaryOf(report: string): string {
  const paragraph =
    report
      .split(/\n\s*\n/)
      .map((p) => p.trim())
      .find((p) => p && !p.startsWith("#")) ?? report.trim();
  const flat = paragraph.replace(/\s+/g, " ");
  return flat.length > 500 ? `${flat.slice(0, 499)}…` : flat;
}

/** Search and read tools for the sub-loop; every page read is noted in `read` (url → title). */
function researchTools(scope: TurnScope, signal: AbortSignal, read: Map<string, string>) {
  const { env, origin } = scope;
  return {
    web_search: tool({
      description: "Search the web. Answers up to 8 results with title, url and snippet.",
      inputSchema: z.object({ query: z.string().min(1).max(400) }),
      execute: async ({ query }) => ({ results: await webSearch(env, query, { signal, origin }) }),
    }),
    read_url: tool({
      description: "Read the main text of a web page by its https URL.",
      inputSchema: z.object({ url: z.string().min(1).max(2000) }),
      execute: async ({ url }) => {
        const page = await readUrl(env, url, { signal, origin });
        read.set(page.url, page.title ?? page.url);
        const { text, truncated } = clip(page.content, RESEARCH_PAGE_LIMIT);
        return { url: page.url, title: page.title, content: text, truncated: truncated || page.truncated };
      },
    }),
  };
}

/** Runs the sub-loop and answers the model's report text (never empty). */
async function writeReport(
  model: LanguageModel,
  question: string,
  tools: ReturnType<typeof researchTools>,
  signal: AbortSignal,
): Promise<string> {
  let text: string;
  try {
    const result = await generateText({
      model,
      instructions: RESEARCH_PROMPT,
      prompt: `Research question: ${question}`,
      tools,
      stopWhen: isStepCount(RESEARCH_STEPS),
      // The last step has no tools: the model must write the report with what it found.
      prepareStep: ({ stepNumber }) =>
        stepNumber >= RESEARCH_STEPS - 1 ? { activeTools: [], toolChoice: "none" as const } : undefined,
      maxRetries: 1,
      abortSignal: signal,
    });
    text = result.text.trim();
  } catch (e) {
    if (signal.aborted) throw new Error("The research was cancelled: the turn ran out of time");
    logError("research failed", e);
    throw new Error("The research could not be completed: the model failed");
  }
  if (!text) throw new Error("The research produced no report");
  return text;
}

/** The stored Markdown: the question as title, the report, then the pages read it does not link. */
function reportDocument(question: string, text: string, read: Map<string, string>): string {
  const sources = [...read].filter(([url]) => !text.includes(url));
  return [
    `# ${question.replace(/\s+/g, " ").trim()}`,
    "",
    text,
    ...(sources.length ? ["", "## Pages read", "", ...sources.map(([url, title]) => `- [${title}](${url})`)] : []),
    "",
  ].join("\n");
}

/**
 * A bounded sub-loop: the model searches and reads (the same search and reader the
 * `web_search` and `read_url` tools use, through the guarded fetch) for at most
 * `RESEARCH_STEPS - 1` steps, then writes a Markdown report, stored as an artifact.
 */
export async function research(
  scope: TurnScope,
  model: LanguageModel,
  question: string,
  signal: AbortSignal,
): Promise<ResearchOutcome> {
  const read = new Map<string, string>();
  const text = await writeReport(model, question, researchTools(scope, signal, read), signal);
  const report = reportDocument(question, text, read);
  const summary = summaryOf(text);
  const stored = await storeProduced(
    scope,
    {
      name: `research-${nameStem(question, "report")}.md`,
      contentType: "text/markdown; charset=utf-8",
      caption: summary,
      source: "research",
    },
    new TextEncoder().encode(report),
  );
  return { ...stored, summary };
}
