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

/**
 * The main text of an HTML document: headings (as Markdown `#` lines), paragraphs and list
 * items (`- `), without scripts, styles, navigation, headers, footers or asides. When the page
 * marks a `main` or `article`, only the text inside it. Stops collecting at `limit` characters.
 */
export async function htmlMainText(html: ReadableStream<Uint8Array> | string, limit = TEXT_LIMIT): Promise<PageText> {
  let skip = 0;
  let inMain = 0;
  let title = "";
  let inTitle = false;
  const all: string[] = [];
  const main: string[] = [];
  let allSize = 0;
  let mainSize = 0;
  let allCut = false;
  let mainCut = false;
  type Open = { prefix: string; text: string; main: boolean };
  const open: Open[] = [];

  const flush = () => {
    const block = open[open.length - 1];
    if (!block) return;
    const line = decodeEntities(block.text).replace(/\s+/g, " ").trim();
    block.text = "";
    if (!line) return;
    const out = `${block.prefix}${line}`;
    if (allSize < limit) {
      all.push(out);
      allSize += out.length + 1;
    } else allCut = true;
    if (block.main && mainSize < limit) {
      main.push(out);
      mainSize += out.length + 1;
    } else if (block.main) mainCut = true;
  };
  const rewriter = new HTMLRewriter()
    .on("title", {
      element(el) {
        inTitle = onEndTag(el, () => {
          inTitle = false;
        });
      },
    })
    .on(SKIPPED, {
      element(el) {
        if (onEndTag(el, () => skip--)) skip++;
      },
    })
    .on(MAIN, {
      element(el) {
        if (onEndTag(el, () => inMain--)) inMain++;
      },
    })
    .on(BLOCKS, {
      element(el) {
        const tag = el.tagName.toLowerCase();
        const prefix = /^h[1-6]$/.test(tag) ? `${"#".repeat(Number(tag[1]))} ` : tag === "li" ? "- " : "";
        const block = { prefix, text: "", main: inMain > 0 };
        const closes = onEndTag(el, () => {
          flush();
          open.pop();
        });
        if (!closes) return;
        flush();
        open.push(block);
      },
    })
    .onDocument({
      text(chunk) {
        if (inTitle) title += chunk.text;
        else if (skip === 0 && open.length > 0) open[open.length - 1]!.text += chunk.text;
      },
    });

  const response = new Response(html, { headers: { "Content-Type": "text/html; charset=utf-8" } });
  await rewriter.transform(response).body?.pipeTo(new WritableStream());
  const useMain = main.length > 0;
  const clipped = clip((useMain ? main : all).join("\n"), limit);
  const cleanTitle = decodeEntities(title).replace(/\s+/g, " ").trim();
  return {
    title: cleanTitle || null,
    text: clipped.text,
    truncated: clipped.truncated || (useMain ? mainCut : allCut),
  };
}
