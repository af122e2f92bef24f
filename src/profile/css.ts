/**
 * What a site's stylesheets (and inline `<style>`) say about its brand: the colours and the
 * font families, ranked into the profile's palette and fonts.
 */

export const MAX_PALETTE = 6;
export const MAX_FONTS = 6;

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

/** The first real family a `font-family` value names (not a generic one, nor a variable), if not absurdly long. */
function firstFamily(value: string): string | undefined {
  const family = value
    .split(",")
    .map(unquote)
    .find((f) => f && !GENERIC_FONTS.has(f.toLowerCase()) && !f.startsWith("var("));
  return family && family.length <= 100 ? family : undefined;
}

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
    const family = firstFamily(value);
    if (family) into.fontCounts.set(family, (into.fontCounts.get(family) ?? 0) + 1);
  }
  for (const [name, value] of vars) {
    if (!name.includes("font")) continue;
    const family = firstFamily(value);
    if (family && !/^\d/.test(family)) into.fontCounts.set(family, (into.fontCounts.get(family) ?? 0) + 1);
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
