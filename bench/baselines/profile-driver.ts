// Bundled by bench/suites/profile.mjs into a Worker that runs the crawler's extraction (the same
// code the queue consumer runs, without the network) on the fixture pages, `n` times per
// request: `GET /?page=wordpress&n=50&mode=ours|baseline`.
// `baseline` streams the same bytes through an HTMLRewriter with no handlers: the parse alone.

import { analyzeCss, fontsOf, paletteOf } from "../../src/profile/css";
import { extractPage, summaryOf } from "../../src/profile/extract";
import { logoOf } from "../../src/profile/icons";
import { TechnologyMatcher } from "../../src/profile/signatures";
import brandCss from "../../test/fixtures/profile/brand.css";
import brandHtml from "../../test/fixtures/profile/brand.html";
import nextjsCss from "../../test/fixtures/profile/nextjs.css";
import nextjsHtml from "../../test/fixtures/profile/nextjs.html";
import shopifyHtml from "../../test/fixtures/profile/shopify.html";
import shopifyCss from "../../test/fixtures/profile/shopify-base.css";
import staticCss from "../../test/fixtures/profile/static.css";
import staticHtml from "../../test/fixtures/profile/static.html";
import wordpressHtml from "../../test/fixtures/profile/wordpress.html";
import wordpressCss from "../../test/fixtures/profile/wordpress-style.css";

const PAGES: Record<string, { html: string; css: string }> = {
  wordpress: { html: wordpressHtml, css: wordpressCss },
  nextjs: { html: nextjsHtml, css: nextjsCss },
  shopify: { html: shopifyHtml, css: shopifyCss },
  static: { html: staticHtml, css: staticCss },
  brand: { html: brandHtml, css: brandCss },
};
// The worst case the crawler accepts: a home page at the 2 MiB cap (the WordPress page padded with paragraphs).
const filler = `<p>${"Fresh sourdough and seasonal pies baked every morning in Portland. ".repeat(30)}</p>\n`;
const capped = wordpressHtml.replace(
  "</main>",
  `${filler.repeat(Math.floor((2 * 1024 * 1024 - wordpressHtml.length) / filler.length))}</main>`,
);
PAGES.capped = { html: capped, css: wordpressCss };

const encoder = new TextEncoder();
const streamOf = (bytes: Uint8Array) =>
  new ReadableStream<Uint8Array>({
    start(c) {
      for (let i = 0; i < bytes.byteLength; i += 16 * 1024) c.enqueue(bytes.subarray(i, i + 16 * 1024));
      c.close();
    },
  });

async function ours(page: { html: Uint8Array; css: string }) {
  const tech = new TechnologyMatcher();
  tech.headers(new Headers({ Server: "nginx", "X-Powered-By": "Next.js" }));
  const facts = await extractPage(streamOf(page.html), "https://bench.example.com/", tech);
  const css = analyzeCss(facts.inlineCss);
  analyzeCss(page.css, css);
  return {
    summary: summaryOf(facts),
    palette: paletteOf([facts.themeColor], css),
    fonts: fontsOf(facts.googleFonts, css),
    logo: logoOf(facts.icons, facts.ogImage)?.url ?? null,
    technologies: tech.result(),
  };
}

async function baseline(page: { html: Uint8Array }) {
  const res = new Response(streamOf(page.html), { headers: { "Content-Type": "text/html" } });
  await new HTMLRewriter().transform(res).body?.pipeTo(new WritableStream());
  return null;
}

const encoded = Object.fromEntries(
  Object.entries(PAGES).map(([k, v]) => [k, { html: encoder.encode(v.html), css: v.css }]),
);

export default {
  async fetch(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const page = encoded[url.searchParams.get("page") ?? ""];
    if (!page) return new Response(JSON.stringify(Object.keys(encoded)), { status: 404 });
    const n = Number(url.searchParams.get("n") ?? 1);
    const run = url.searchParams.get("mode") === "baseline" ? baseline : ours;
    let last: unknown = null;
    for (let i = 0; i < n; i++) last = await run(page);
    return Response.json({ bytes: page.html.byteLength, last });
  },
};
