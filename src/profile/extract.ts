/**
 * What a home page says about the business, read while it streams through `HTMLRewriter`
 * (never parsed whole): title, descriptions, text, theme colour, stylesheets, manifest, icons
 * and technology clues. No I/O here; the crawler fetches, this reads.
 */
import { decodeEntities, onEndTag } from "../platform/html";
import { CSS_LIMIT, googleFontFamilies, hexColour } from "./css";
import { type Icon, iconSize } from "./icons";
import type { TechnologyMatcher } from "./signatures";
import { absoluteUrl } from "./urls";

export const SUMMARY_MAX_LENGTH = 500;
/** Text of the page kept for the enrichment prompt. */
export const PAGE_TEXT_LIMIT = 3_000;
/** A paragraph shorter than this is a label or a button, not a summary. */
const MIN_PARAGRAPH = 40;

export type PageFacts = {
  title: string | null;
  /** Meta, Open Graph or Twitter description, in that order of preference. */
  description: string | null;
  firstParagraph: string | null;
  /** Title, headings and paragraphs, for the model. */
  text: string;
  themeColor: string | null;
  /** Absolute stylesheet URLs in document order. */
  stylesheets: string[];
  /** Families named by Google Fonts links. */
  googleFonts: string[];
  inlineCss: string;
  manifest: string | null;
  icons: Icon[];
  ogImage: string | null;
};

const clean = (s: string) => decodeEntities(s).replace(/\s+/g, " ").trim();

// `style` is not here: its own handler reads it (an element keeps one end-tag handler).
const SKIP = "script, noscript, template, svg, nav, header, footer, aside, form, button, select";
const TEXT_BLOCKS = "h1, h2, h3, p, li";

/** What a read holds while the page streams, besides the facts themselves. */
type Reading = {
  facts: PageFacts;
  descriptions: Record<"meta" | "og" | "twitter", string | null>;
  title: string;
  inTitle: boolean;
  inStyle: boolean;
  /** How many skipped elements (navigation, scripts, forms...) the text is inside. */
  skip: number;
  block: { tag: string; text: string } | null;
  textSize: number;
  texts: string[];
};

/** Reads a home page as it streams. `technologies` collects the page's clues. */
export async function extractPage(
  html: ReadableStream<Uint8Array> | string,
  pageUrl: string,
  technologies: TechnologyMatcher,
): Promise<PageFacts> {
  const r = newReading();
  const response = new Response(html, { headers: { "Content-Type": "text/html; charset=utf-8" } });
  await pageReader(r, technologies, pageUrl).transform(response).body?.pipeTo(new WritableStream());
  return finish(r);
}

/** The rewriter that reads the page into `r`: one handler per kind of element, and the text. */
function pageReader(r: Reading, technologies: TechnologyMatcher, pageUrl: string): HTMLRewriter {
  return new HTMLRewriter()
    .on("title", { element: (el) => readUntilClosed(el, r, "inTitle") })
    .on("meta", { element: (el) => readMeta(el, r, technologies, pageUrl) })
    .on("link", { element: (el) => readLink(el, r.facts, technologies, pageUrl) })
    .on("script", { element: (el) => readScript(el, technologies, pageUrl) })
    .on("style", { element: (el) => readUntilClosed(el, r, "inStyle") })
    .on(SKIP, { element: (el) => skipInside(el, r) })
    .on(TEXT_BLOCKS, { element: (el) => readTextBlock(el, r) })
    .onDocument({ text: (chunk) => readText(chunk.text, r) });
}

/** The facts once the page is read: its title, its preferred description and its text. */
function finish(r: Reading): PageFacts {
  const { facts, descriptions } = r;
  facts.title = clean(r.title) || null;
  facts.description = descriptions.meta || descriptions.og || descriptions.twitter || null;
  facts.text = [facts.title, ...r.texts].filter(Boolean).join("\n").slice(0, PAGE_TEXT_LIMIT);
  return facts;
}

function newReading(): Reading {
  return {
    facts: {
      title: null,
      description: null,
      firstParagraph: null,
      text: "",
      themeColor: null,
      stylesheets: [],
      googleFonts: [],
      inlineCss: "",
      manifest: null,
      icons: [],
      ogImage: null,
    },
    descriptions: { meta: null, og: null, twitter: null },
    title: "",
    inTitle: false,
    inStyle: false,
    skip: 0,
    block: null,
    textSize: 0,
    texts: [],
  };
}

/** `<title>` and an inline `<style>`: their text is the title, or CSS, until they close. */
function readUntilClosed(el: Element, r: Reading, flag: "inTitle" | "inStyle"): void {
  r[flag] = onEndTag(el, () => {
    r[flag] = false;
  });
}

/** A `<script>`: its source and its id are technology clues. */
function readScript(el: Element, technologies: TechnologyMatcher, pageUrl: string): void {
  const src = absoluteUrl(el.getAttribute("src"), pageUrl);
  if (src) technologies.script(src);
  const id = el.getAttribute("id");
  if (id) technologies.script(`#${id}`);
}

/** Navigation, scripts, forms...: no text inside them is the page's text. */
function skipInside(el: Element, r: Reading): void {
  if (onEndTag(el, () => r.skip--)) r.skip++;
}

/** A `<meta>`: the descriptions, the theme colour, the generator and the share image. */
function readMeta(el: Element, r: Reading, technologies: TechnologyMatcher, pageUrl: string): void {
  const key = (el.getAttribute("name") ?? el.getAttribute("property") ?? "").trim().toLowerCase();
  const content = el.getAttribute("content");
  if (!content) return;
  if (key === "description") r.descriptions.meta ??= clean(content);
  else if (key === "og:description") r.descriptions.og ??= clean(content);
  else if (key === "twitter:description") r.descriptions.twitter ??= clean(content);
  else if (key === "theme-color") r.facts.themeColor ??= hexColour(content.trim());
  else if (key === "generator") technologies.generator(clean(content));
  else if (key === "og:image" || key === "og:image:url") r.facts.ogImage ??= absoluteUrl(content, pageUrl);
}

/** A `<link>`: stylesheets (Google Fonts apart), the manifest and the icons. */
function readLink(el: Element, facts: PageFacts, technologies: TechnologyMatcher, pageUrl: string): void {
  const href = absoluteUrl(el.getAttribute("href"), pageUrl);
  if (!href) return;
  technologies.link(href);
  const rel = ` ${(el.getAttribute("rel") ?? "").toLowerCase()} `;
  if (rel.includes(" stylesheet ")) {
    const families = googleFontFamilies(href);
    if (families.length) facts.googleFonts.push(...families);
    else facts.stylesheets.push(href);
  }
  if (rel.includes(" manifest ")) facts.manifest ??= href;
  if (rel.includes(" apple-touch-icon ")) {
    facts.icons.push({
      url: href,
      size: iconSize(el.getAttribute("sizes"), href) || 180,
      from: "apple-touch-icon",
    });
  } else if (rel.includes(" icon ")) {
    facts.icons.push({ url: href, size: iconSize(el.getAttribute("sizes"), href), from: "icon" });
  }
}

/** A heading, paragraph or list item outside skipped elements: its text becomes a line of the page's text. */
function readTextBlock(el: Element, r: Reading): void {
  if (r.skip > 0) return;
  const tag = el.tagName.toLowerCase();
  const mine = { tag, text: "" };
  const closes = onEndTag(el, () => {
    if (r.block !== mine) return;
    const line = clean(mine.text);
    r.block = null;
    if (!line) return;
    if (tag === "p" && !r.facts.firstParagraph && line.length >= MIN_PARAGRAPH) r.facts.firstParagraph = line;
    if (r.textSize < PAGE_TEXT_LIMIT) {
      r.texts.push(line);
      r.textSize += line.length + 1;
    }
  });
  if (closes) r.block = mine;
}

/** Text as it streams: into the title, the inline CSS or the open text block. */
function readText(text: string, r: Reading): void {
  if (r.inTitle) r.title += text;
  else if (r.inStyle) {
    if (r.facts.inlineCss.length < CSS_LIMIT) r.facts.inlineCss += text;
  } else if (r.block && r.skip === 0 && r.block.text.length < PAGE_TEXT_LIMIT) r.block.text += text;
}

/** The summary: the page's description, else its first real paragraph, clipped on a word. */
export function summaryOf(facts: PageFacts): string | null {
  const text = facts.description || facts.firstParagraph;
  if (!text) return null;
  if (text.length <= SUMMARY_MAX_LENGTH) return text;
  const cut = text.slice(0, SUMMARY_MAX_LENGTH - 1);
  return `${cut.slice(0, cut.lastIndexOf(" ") > 200 ? cut.lastIndexOf(" ") : cut.length)}…`;
}
