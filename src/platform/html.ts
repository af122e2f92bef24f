/** Small helpers for reading HTML with the runtime's streaming `HTMLRewriter`. */

const NAMED: Record<string, string> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
  nbsp: " ",
  ndash: "–",
  mdash: "—",
  hellip: "…",
  lsquo: "‘",
  rsquo: "’",
  ldquo: "“",
  rdquo: "”",
  copy: "©",
  reg: "®",
  euro: "€",
};

/** Decodes the character references text chunks of `HTMLRewriter` still carry. */
export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (whole, ref: string) => {
    if (ref[0] === "#") {
      const code = ref[1] === "x" || ref[1] === "X" ? Number.parseInt(ref.slice(2), 16) : Number(ref.slice(1));
      return Number.isFinite(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return NAMED[ref.toLowerCase()] ?? whole;
  });
}

const INLINE_TAG = /<\/?(?:a|abbr|b|code|em|i|mark|s|small|span|strong|sub|sup|u)\b[^>]*>/gi;

/**
 * Plain text of an HTML string: scripts and styles dropped, inline tags removed without a gap
 * (`<b>Cloud</b>flare` stays one word), other tags read as a space, references decoded and
 * white space folded.
 */
export function htmlToText(html: string): string {
  return decodeEntities(
    html
      .replace(/<(script|style)\b[^>]*>[\s\S]*?<\/\1\s*>/gi, " ")
      .replace(INLINE_TAG, "")
      .replace(/<[^>]*>/g, " "),
  )
    .replace(/\s+/g, " ")
    .trim();
}

/** Registers `fn` for the element's end tag; false for an element that has none (void, self-closing). */
export function onEndTag(el: Element, fn: () => void): boolean {
  try {
    el.onEndTag(fn);
    return true;
  } catch {
    return false;
  }
}
