import { type ToolSet, tool } from "ai";
import { z } from "zod";
import type { ToolProvider, TurnScope } from "../platform/turn-tools";
import { CONFIGURED_MODELS, type ModelSource, skillStatus } from "./availability";
import { readDocument } from "./documents";
import { generateImageArtifact } from "./images";
import { readUrl } from "./reader";
import { research } from "./research";
import { webSearch } from "./search";

/** The turn's deadline and the runtime's per-call one, whichever comes first. */
const callSignal = (scope: TurnScope, own?: AbortSignal) => (own ? AbortSignal.any([scope.signal, own]) : scope.signal);

// The tools' input schemas, built once (a turn only binds them to its scope).
const SearchInputSchema = z.object({ query: z.string().min(1).max(400).describe("What to search for") });
const ReadUrlInputSchema = z.object({ url: z.string().min(1).max(2000).describe("The page's https URL") });
const ReadDocumentInputSchema = z.object({ artifact_id: z.string().min(1).max(100).describe("The artifact's id") });
const GenerateImageInputSchema = z.object({
  prompt: z.string().min(1).max(4000).describe("A full description of the image"),
});
const ResearchInputSchema = z.object({ question: z.string().min(1).max(2000).describe("The question to research") });

type SkillTools = { instructions: string; tools(scope: TurnScope, models: ModelSource): ToolSet };

/** Catalogue skill slug → the tools it offers a turn. `code-interpreter` has none (no sandbox). */
export const SKILL_TOOLS: Readonly<Record<string, SkillTools>> = {
  "web-search": {
    instructions:
      "Use web_search for facts that may be recent or that you are unsure of; cite the URLs of the results you rely on.",
    tools: (scope) => ({
      web_search: tool({
        description: "Search the public web. Answers up to 8 results, each with title, url and snippet.",
        inputSchema: SearchInputSchema,
        execute: async ({ query }, { abortSignal }) => ({
          results: await webSearch(scope.env, query, { signal: callSignal(scope, abortSignal), origin: scope.origin }),
        }),
      }),
    }),
  },
  "web-reader": {
    instructions:
      "Use read_url to read a web page the user mentions or a search result you need in full; say which page you read.",
    tools: (scope) => ({
      read_url: tool({
        description:
          "Fetch a public web page by its https URL and answer its main text (headings, paragraphs, lists), its title and final URL.",
        inputSchema: ReadUrlInputSchema,
        execute: async ({ url }, { abortSignal }) =>
          readUrl(scope.env, url, { signal: callSignal(scope, abortSignal), origin: scope.origin }),
      }),
    }),
  },
  "document-reader": {
    instructions:
      "Use read_document to read a file shared in this conversation (text, Markdown, CSV, JSON, HTML, PDF, Word .docx or Excel .xlsx) by its artifact id.",
    tools: (scope) => ({
      read_document: tool({
        description:
          "Read the text of a file of this conversation by its artifact id: text, Markdown, CSV, JSON, HTML (main text), PDF (text of each page), Word .docx (paragraphs, tables by tabs) or Excel .xlsx (each sheet as CSV).",
        inputSchema: ReadDocumentInputSchema,
        execute: async ({ artifact_id }) => readDocument(scope.env, scope, artifact_id),
      }),
    }),
  },
  "image-generation": {
    instructions:
      "Use generate_image when the user asks for a picture, illustration or diagram; describe the image fully in the prompt. The image is delivered as a file.",
    tools: (scope, models) => ({
      generate_image: tool({
        description:
          "Create an image from a description. The image is stored as a file of the conversation; answers its artifact_id and download_url.",
        inputSchema: GenerateImageInputSchema,
        execute: async ({ prompt }, { abortSignal }) => {
          const model = models.image(scope.env);
          if (!model) throw new Error("Image generation is not configured in this deployment");
          return generateImageArtifact(scope, model, prompt, callSignal(scope, abortSignal));
        },
      }),
    }),
  },
  "deep-research": {
    instructions:
      "Use research for questions that need several sources and a written report; it delivers a Markdown report file and answers a summary you can relay.",
    tools: (scope, models) => ({
      research: tool({
        description:
          "Investigate a question across several web pages (searching and reading) and write a sourced Markdown report, stored as a file. Answers artifact_id, download_url and a summary.",
        inputSchema: ResearchInputSchema,
        execute: async ({ question }, { abortSignal }) => {
          const model = models.language(scope.env);
          if (!model) throw new Error("Research needs a language model, and none is configured");
          return research(scope, model, question, callSignal(scope, abortSignal));
        },
      }),
    }),
  },
};

/**
 * The skills area's tool provider: for each skill the agent may use that is available in
 * this deployment (`skillStatus`), its tools and its instruction fragment.
 */
export function skillToolProvider(models: ModelSource = CONFIGURED_MODELS): ToolProvider {
  return async (scope) => {
    const tools: ToolSet = {};
    const instructions: string[] = [];
    for (const slug of new Set(scope.agent.skills)) {
      const skill = SKILL_TOOLS[slug];
      if (!skill || !skillStatus(scope.env, slug, models).available) continue;
      Object.assign(tools, skill.tools(scope, models));
      instructions.push(skill.instructions);
    }
    return { tools, instructions };
  };
}
