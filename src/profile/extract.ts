/**
 * What a home page says about the business, read while it streams through `HTMLRewriter`
 * (never parsed whole), and what its stylesheets and manifest add: summary, palette, fonts,
 * logo candidates and technology clues. No I/O here; the crawler fetches, this reads.
 */
import { decodeEntities, onEndTag } from "../platform/html";
import type { TechnologyMatcher } from "./signatures";

export const MAX_PALETTE = 6;
export const MAX_FONTS = 6;
export const SUMMARY_MAX_LENGTH = 500;
/** Text of the page kept for the enrichment prompt. */
export const PAGE_TEXT_LIMIT = 3_000;
/** A paragraph shorter than this is a label or a button, not a summary. */
const MIN_PARAGRAPH = 40;

export type Icon = { url: string; size: number; from: "icon" | "apple-touch-icon" | "manifest" };

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

function absolute(href: string | null, base: string): string | null {
  if (!href) return null;
  try {
    const url = new URL(decodeEntities(href.trim()), base);
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : null;
  } catch {
    return null;
  }
}

/** The largest edge of a `sizes` attribute (`any` for scalable icons counts as the largest). */
function iconSize(sizes: string | null, href: string): number {
  if (sizes?.toLowerCase().includes("any") || /\.svg(?:$|\?)/i.test(href)) return 10_000;
  let best = 0;
  for (const m of (sizes ?? "").matchAll(/(\d+)x(\d+)/gi)) best = Math.max(best, Number(m[1]));
  return best;
}

/** Google Fonts stylesheet URL → family names (`css2?family=Inter:wght@400&family=Playfair+Display`, `css?family=A|B`). */
export function googleFontFamilies(href: string): string[] {
  let url: URL;
  try {
    url = new URL(href);
  } catch {
    return [];
  }
  if (url.hostname !== "fonts.googleapis.com") return [];
  return url.searchParams
    .getAll("family")
    .flatMap((f) => f.split("|"))
    .map((f) => f.split(":")[0]!.replace(/\+/g, " ").trim())
    .filter(Boolean);
}

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
  const rewriter = new HTMLRewriter()
    .on("title", {
      element(el) {
        r.inTitle = onEndTag(el, () => {
          r.inTitle = false;
        });
      },
    })
    .on("meta", { element: (el) => readMeta(el, r, technologies, pageUrl) })
    .on("link", { element: (el) => readLink(el, r.facts, technologies, pageUrl) })
    .on("script", {
      element(el) {
        const src = absolute(el.getAttribute("src"), pageUrl);
        if (src) technologies.script(src);
        const id = el.getAttribute("id");
        if (id) technologies.script(`#${id}`);
      },
    })
    .on("style", {
      element(el) {
        r.inStyle = onEndTag(el, () => {
          r.inStyle = false;
        });
      },
    })
    .on(SKIP, {
      element(el) {
        if (onEndTag(el, () => r.skip--)) r.skip++;
      },
    })
    .on(TEXT_BLOCKS, { element: (el) => readTextBlock(el, r) })
    .onDocument({ text: (chunk) => readText(chunk.text, r) });

  const response = new Response(html, { headers: { "Content-Type": "text/html; charset=utf-8" } });
  await rewriter.transform(response).body?.pipeTo(new WritableStream());

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
  else if (key === "og:image" || key === "og:image:url") r.facts.ogImage ??= absolute(content, pageUrl);
}

/** A `<link>`: stylesheets (Google Fonts apart), the manifest and the icons. */
function readLink(el: Element, facts: PageFacts, technologies: TechnologyMatcher, pageUrl: string): void {
  const href = absolute(el.getAttribute("href"), pageUrl);
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

// ---- colours ----

/** CSS read per stylesheet (and inline), at most. */
export const CSS_LIMIT = 512 * 1024;

/** A CSS colour (hex or rgb()) as lowercase `#rrggbb`, or null. Alpha is dropped. */
export function hexColour(value: string): string | null {
  const v = value.trim().toLowerCase();
  const hex = /^#([0-9a-f]{3,8})$/.exec(v)?.[1];
  if (hex) {
    if (hex.length === 3 || hex.length === 4) return `#${[...hex.slice(0, 3)].map((c) => c + c).join("")}`;
    if (hex.length === 6 || hex.length === 8) return `#${hex.slice(0, 6)}`;
    return null;
  }
  const rgb = /^rgba?\(\s*(\d{1,3})[\s,]+(\d{1,3})[\s,]+(\d{1,3})/.exec(v);
  if (rgb) {
    const parts = rgb.slice(1, 4).map(Number);
    if (parts.some((n) => n > 255)) return null;
    return `#${parts.map((n) => n.toString(16).padStart(2, "0")).join("")}`;
  }
  return null;
}

/** Whether a colour carries hue (greys, white and black are page chrome, not brand). */
export function isChromatic(hex: string): boolean {
  const [r, g, b] = [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16)) as [number, number, number];
  return Math.max(r, g, b) - Math.min(r, g, b) > 24;
}

const BRAND_NAME = /primary|brand|accent|secondary|main|highlight|theme/;
const COLOUR_TOKEN = /#[0-9a-f]{3,8}\b|rgba?\([^)]*\)/gi;

const GENERIC_FONTS = new Set([
  "serif",
  "sans-serif",
  "monospace",
  "cursive",
  "fantasy",
  "system-ui",
  "ui-serif",
  "ui-sans-serif",
  "ui-monospace",
  "ui-rounded",
  "-apple-system",
  "blinkmacsystemfont",
  "emoji",
  "math",
  "inherit",
  "initial",
  "unset",
  "revert",
]);

export type CssFacts = {
  /** Custom properties holding colours, in declaration order, brand-like names first. */
  variableColours: string[];
  /** Every colour written, with how often. */
  colourCounts: Map<string, number>;
  /** First real family of each `font-family`, with how often. */
  fontCounts: Map<string, number>;
  /** Families of `@import`ed Google Fonts. */
  googleFonts: string[];
};

export function emptyCssFacts(): CssFacts {
  return { variableColours: [], colourCounts: new Map(), fontCounts: new Map(), googleFonts: [] };
}

const unquote = (s: string) =>
  s
    .trim()
    .replace(/^["']|["']$/g, "")
    .trim();

/** Adds what one stylesheet (or inline `<style>`) says to `into`. */
export function analyzeCss(css: string, into: CssFacts = emptyCssFacts()): CssFacts {
  const text = css.slice(0, CSS_LIMIT).replace(/\/\*[\s\S]*?\*\//g, "");
  const vars = new Map<string, string>();
  const brand: string[] = [];
  const other: string[] = [];
  for (const m of text.matchAll(/--([\w-]+)\s*:\s*([^;}]+)/g)) {
    const name = m[1]!.toLowerCase();
    const value = m[2]!.trim();
    vars.set(name, value);
    const colour = hexColour(value);
    if (colour) (BRAND_NAME.test(name) ? brand : other).push(colour);
  }
  into.variableColours.push(...brand, ...other);
  for (const m of text.matchAll(COLOUR_TOKEN)) {
    const colour = hexColour(m[0]);
    if (colour) into.colourCounts.set(colour, (into.colourCounts.get(colour) ?? 0) + 1);
  }
  for (const m of text.matchAll(/font-family\s*:\s*([^;}]+)/gi)) {
    let value = m[1]!.trim();
    const ref = /^var\(\s*--([\w-]+)/.exec(value);
    if (ref) value = vars.get(ref[1]!.toLowerCase()) ?? "";
    const family = value
      .split(",")
      .map(unquote)
      .find((f) => f && !GENERIC_FONTS.has(f.toLowerCase()) && !f.startsWith("var("));
    if (family && family.length <= 100) into.fontCounts.set(family, (into.fontCounts.get(family) ?? 0) + 1);
  }
  for (const [name, value] of vars) {
    if (!name.includes("font")) continue;
    const family = value
      .split(",")
      .map(unquote)
      .find((f) => f && !GENERIC_FONTS.has(f.toLowerCase()) && !f.startsWith("var("));
    if (family && family.length <= 100 && !/^\d/.test(family))
      into.fontCounts.set(family, (into.fontCounts.get(family) ?? 0) + 1);
  }
  for (const m of text.matchAll(/@import\s+(?:url\()?["']?([^"')\s;]+)/gi))
    into.googleFonts.push(...googleFontFamilies(m[1]!));
  return into;
}

const byCount = (counts: Map<string, number>) =>
  [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([k]) => k);

function firstDistinct(values: Iterable<string>, max: number, key = (s: string) => s): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const v of values) {
    const k = key(v);
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(v);
    if (out.length === max) break;
  }
  return out;
}

/** At most 6 colours: theme colours, then custom-property colours, then the most used chromatic ones. */
export function paletteOf(themeColours: readonly (string | null)[], css: CssFacts): string[] {
  const variables = css.variableColours;
  return firstDistinct(
    [
      ...themeColours.filter((c): c is string => c !== null),
      ...variables.filter(isChromatic),
      ...variables.filter((c) => !isChromatic(c)),
      ...byCount(css.colourCounts).filter(isChromatic),
    ],
    MAX_PALETTE,
  );
}

/** At most 6 families: Google Fonts first, then by how often the CSS names them. */
export function fontsOf(googleFonts: readonly string[], css: CssFacts): string[] {
  return firstDistinct([...googleFonts, ...css.googleFonts, ...byCount(css.fontCounts)], MAX_FONTS, (f) =>
    f.toLowerCase(),
  );
}

/** The manifest's icons and theme colour. */
export function readManifest(json: unknown, manifestUrl: string): { icons: Icon[]; themeColor: string | null } {
  if (!json || typeof json !== "object") return { icons: [], themeColor: null };
  const m = json as { icons?: unknown; theme_color?: unknown };
  const icons: Icon[] = [];
  if (Array.isArray(m.icons)) {
    for (const icon of m.icons.slice(0, 50)) {
      if (!icon || typeof icon !== "object") continue;
      const { src, sizes } = icon as { src?: unknown; sizes?: unknown };
      const url = typeof src === "string" ? absolute(src, manifestUrl) : null;
      if (url) icons.push({ url, size: iconSize(typeof sizes === "string" ? sizes : null, url), from: "manifest" });
    }
  }
  return { icons, themeColor: typeof m.theme_color === "string" ? hexColour(m.theme_color) : null };
}

/** The logo: the largest icon (page or manifest), else the Open Graph image. */
export function logoOf(
  icons: readonly Icon[],
  ogImage: string | null,
): Icon | { url: string; from: "og:image" } | null {
  const rank = { "apple-touch-icon": 2, manifest: 1, icon: 0 } as const;
  const best = [...icons].sort((a, b) => b.size - a.size || rank[b.from] - rank[a.from])[0];
  if (best) return best;
  return ogImage ? { url: ogImage, from: "og:image" } : null;
}
