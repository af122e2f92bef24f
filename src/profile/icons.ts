/** The site's icons, from the page's links and its web app manifest, and the logo chosen among them. */
import { hexColour } from "./css";
import { absoluteUrl } from "./urls";

export type Icon = { url: string; size: number; from: "icon" | "apple-touch-icon" | "manifest" };

/** The largest edge of a `sizes` attribute (`any` for scalable icons counts as the largest). */
export function iconSize(sizes: string | null, href: string): number {
  if (sizes?.toLowerCase().includes("any") || /\.svg(?:$|\?)/i.test(href)) return 10_000;
  let best = 0;
  for (const m of (sizes ?? "").matchAll(/(\d+)x(\d+)/gi)) best = Math.max(best, Number(m[1]));
  return best;
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
      const url = typeof src === "string" ? absoluteUrl(src, manifestUrl) : null;
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
