/**
 * Readable text out of what pages and files carry: the main text of an HTML page (streamed
 * through `HTMLRewriter`, never parsed whole) and text clipped to what a model should read.
 */

import { decodeEntities, onEndTag } from "../platform/html";

/** Longest text one tool result hands the model. */
export const TEXT_LIMIT = 40_000;

export type Clipped = { text: string; truncated: boolean };

export function clip(text: string, limit = TEXT_LIMIT): Clipped {
  return text.length > limit ? { text: text.slice(0, limit), truncated: true } : { text, truncated: false };
}

/** Text in these is never page text: code, chrome and navigation. */
const SKIPPED = "script, style, noscript, template, svg, iframe, nav, header, footer, aside, form, button, select";
/** Blocks whose text is kept, one line each. */
const BLOCKS = "h1, h2, h3, h4, h5, h6, p, li, pre, blockquote, dt, dd, td, th, figcaption, caption";
/** Where a page says its main content is; when present, only its text is kept. */
const MAIN = 'main, article, [role="main"]';

export type PageText = { title: string | null; text: string; truncated: boolean };

/** Lines kept up to a character budget; `cut` says some were dropped. */
type Lines = { lines: string[]; size: number; cut: boolean };
/** A block being read: its line prefix, the text seen so far, and whether it lies inside `MAIN`. */
type OpenBlock = { prefix: string; text: string; main: boolean };
/** What the streaming pass has seen so far. */
type Reading = {
  skip: number;
  inMain: number;
  title: string;
  inTitle: boolean;
  open: OpenBlock[];
  all: Lines;
  main: Lines;
};

function keepLine(lines: Lines, line: string, limit: number): void {
  if (lines.size < limit) {
    lines.lines.push(line);
    lines.size += line.length + 1;
  } else lines.cut = true;
}

function oneLine(text: string): string {
  return decodeEntities(text).replace(/\s+/g, " ").trim();
}

/** Headings become Markdown `#` lines and list items `- ` lines; other blocks are plain. */
function blockPrefix(tagName: string): string {
  const tag = tagName.toLowerCase();
  return /^h[1-6]$/.test(tag) ? `${"#".repeat(Number(tag[1]))} ` : tag === "li" ? "- " : "";
}

/** Ends the innermost open block's current line (text after a nested block starts a new one). */
function flushBlock(reading: Reading, limit: number): void {
  const block = reading.open[reading.open.length - 1];
  if (!block) return;
  const line = oneLine(block.text);
  block.text = "";
  if (!line) return;
  const out = `${block.prefix}${line}`;
  keepLine(reading.all, out, limit);
  if (block.main) keepLine(reading.main, out, limit);
}

function pageRewriter(reading: Reading, limit: number): HTMLRewriter {
  return new HTMLRewriter()
    .on("title", {
      element(el) {
        reading.inTitle = onEndTag(el, () => {
          reading.inTitle = false;
        });
      },
    })
    .on(SKIPPED, {
      element(el) {
        if (onEndTag(el, () => reading.skip--)) reading.skip++;
      },
    })
    .on(MAIN, {
      element(el) {
        if (onEndTag(el, () => reading.inMain--)) reading.inMain++;
      },
    })
    .on(BLOCKS, {
      element(el) {
        const block = { prefix: blockPrefix(el.tagName), text: "", main: reading.inMain > 0 };
        const closes = onEndTag(el, () => {
          flushBlock(reading, limit);
          reading.open.pop();
        });
        if (!closes) return;
        flushBlock(reading, limit);
        reading.open.push(block);
      },
    })
    .onDocument({
      text(chunk) {
        if (reading.inTitle) reading.title += chunk.text;
        else if (reading.skip === 0 && reading.open.length > 0)
          reading.open[reading.open.length - 1]!.text += chunk.text;
      },
    });
}

/**
 * The main text of an HTML document: headings (as Markdown `#` lines), paragraphs and list
 * items (`- `), without scripts, styles, navigation, headers, footers or asides. When the page
 * marks a `main` or `article`, only the text inside it. Stops collecting at `limit` characters.
 */
export async function htmlMainText(html: ReadableStream<Uint8Array> | string, limit = TEXT_LIMIT): Promise<PageText> {
  const reading: Reading = {
    skip: 0,
    inMain: 0,
    title: "",
    inTitle: false,
    open: [],
    all: { lines: [], size: 0, cut: false },
    main: { lines: [], size: 0, cut: false },
  };
  const response = new Response(html, { headers: { "Content-Type": "text/html; charset=utf-8" } });
  await pageRewriter(reading, limit).transform(response).body?.pipeTo(new WritableStream());
  const kept = reading.main.lines.length > 0 ? reading.main : reading.all;
  const clipped = clip(kept.lines.join("\n"), limit);
  return {
    title: oneLine(reading.title) || null,
    text: clipped.text,
    truncated: clipped.truncated || kept.cut,
  };
}
