import { decodeEntities } from "../platform/html";

/** An http(s) URL from an attribute, resolved against the page; null for anything else. */
export function absoluteUrl(href: string | null, base: string): string | null {
  if (!href) return null;
  try {
    const url = new URL(decodeEntities(href.trim()), base);
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : null;
  } catch {
    return null;
  }
}
