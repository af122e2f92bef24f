/**
 * One crawl of a business's site: robots.txt first (honoured for our user agent), then the
 * home page streamed through the extractor, then at most 3 same-site stylesheets and the
 * manifest, then the model's enrichment when one is configured. Every request goes through
 * the guarded fetch. A crawl never throws for what the site does: it answers `ok: false`
 * with the reason.
 */
import type { LanguageModel } from "ai";
import { type GuardedResponse, guardedFetch, OutboundError } from "../platform/guarded-fetch";
import { analyzeCss, CSS_LIMIT, type emptyCssFacts, fontsOf, paletteOf } from "./css";
import { enrich, NO_ENRICHMENT } from "./enrich";
import { extractPage, type PageFacts, summaryOf } from "./extract";
import { type Icon, logoOf, readManifest } from "./icons";
import { ALLOW_ALL, DISALLOW_ALL, parseRobots, type Robots, robotsAllow } from "./robots";
import { OVERRIDABLE_FIELDS, type Technology } from "./schemas";
import { TechnologyMatcher } from "./signatures";

/** The home page is read up to this many bytes; the rest is cut off. */
export const PAGE_LIMIT = 2 * 1024 * 1024;
export const MANIFEST_LIMIT = 256 * 1024;
export const ROBOTS_LIMIT = 512 * 1024;
export const MAX_STYLESHEETS = 3;
export const REQUEST_TIMEOUT_MS = 10_000;

export const DISCOVERED_FIELDS = [...OVERRIDABLE_FIELDS, "technologies"] as const;
export type DiscoveredField = (typeof DISCOVERED_FIELDS)[number];
export type Source = { url: string; fetched_at: string };

export type DiscoveredProfile = {
  summary: string | null;
  palette: string[];
  fonts: string[];
  logo_url: string | null;
  industry: string | null;
  segment: string | null;
  size_hint: string | null;
  technologies: Technology[];
  sources: Partial<Record<DiscoveredField, Source>>;
};

export const EMPTY_DISCOVERY: DiscoveredProfile = {
  summary: null,
  palette: [],
  fonts: [],
  logo_url: null,
  industry: null,
  segment: null,
  size_hint: null,
  technologies: [],
  sources: {},
};

export type CrawlResult =
  | { ok: true; discovered: DiscoveredProfile; fetched: string[]; truncated: boolean }
  | { ok: false; code: string; error: string; fetched: string[] };

export type CrawlOptions = {
  /** The model for enrichment; null or absent leaves industry, segment and size hint null. */
  model?: LanguageModel | null;
  /** Time cap of each request (10 s unless stated). */
  timeoutMs?: number;
};

class CrawlFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** Same site: the domain itself or one of its subdomains (`www.`, `cdn.`). */
export function sameSite(url: string, domain: string): boolean {
  try {
    const host = new URL(url).hostname.toLowerCase();
    return host === domain || host.endsWith(`.${domain}`);
  } catch {
    return false;
  }
}

/** The body of a response, cut (not failed) at the byte cap. */
function cutAtCap(res: GuardedResponse): { stream: ReadableStream<Uint8Array>; cut: () => boolean } {
  const reader = res.body.getReader();
  let cut = false;
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (error) {
        if (res.failure()?.code === "too_large") {
          cut = true;
          controller.close();
        } else controller.error(error);
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
  return { stream, cut: () => cut };
}

async function readText(res: GuardedResponse): Promise<string> {
  const { stream } = cutAtCap(res);
  return new Response(stream).text();
}

/** The home page's response, once it answered 2xx with HTML; otherwise the crawl fails. */
async function openHomePage(home: string, get: Get): Promise<GuardedResponse> {
  const page = await get(home, PAGE_LIMIT, "text/html,application/xhtml+xml");
  if (!page.ok) {
    await page.cancel();
    throw new CrawlFailure("http_error", `The home page answered ${page.status}`);
  }
  const type = page.headers.get("Content-Type") ?? "text/html";
  if (!/html/i.test(type)) {
    await page.cancel();
    throw new CrawlFailure("not_html", `The home page is ${type.split(";")[0]}, not HTML`);
  }
  return page;
}

/** Allowed same-site stylesheets and the manifest, fetched together; one that fails is skipped. */
async function readLinkedAssets(domain: string, robots: Robots, facts: PageFacts, get: Get) {
  const allowed = (url: string) => sameSite(url, domain) && robotsAllow(robots, pathOf(url));
  const sheets = facts.stylesheets.filter(allowed).slice(0, MAX_STYLESHEETS);
  const [cssTexts, manifest] = await Promise.all([
    Promise.all(
      sheets.map((url) =>
        optional(async () => {
          const res = await get(url, CSS_LIMIT, "text/css");
          if (!res.ok) return void (await res.cancel());
          return { url: res.url, text: await readText(res), at: new Date().toISOString() };
        }),
      ),
    ),
    facts.manifest && allowed(facts.manifest) ? readManifestAt(facts.manifest, get) : null,
  ]);
  return { cssTexts, manifest };
}

/** Adds the model's industry, segment and size hint, each sourced to the home page. */
async function addEnrichment(
  model: LanguageModel,
  domain: string,
  discovered: DiscoveredProfile,
  facts: PageFacts,
  pageUrl: string,
): Promise<void> {
  const enrichment = await enrich(model, {
    domain,
    summary: discovered.summary,
    text: facts.text,
    technologies: discovered.technologies.map((t) => t.name),
  });
  Object.assign(discovered, enrichment);
  if (enrichment !== NO_ENRICHMENT) {
    const now = { url: pageUrl, fetched_at: new Date().toISOString() };
    for (const field of ["industry", "segment", "size_hint"] as const)
      if (enrichment[field] !== null) discovered.sources[field] = now;
  }
}

/** Crawls `https://{domain}/` and what it links to. */
export async function crawlSite(env: Env, domain: string, options: CrawlOptions = {}): Promise<CrawlResult> {
  const timeoutMs = options.timeoutMs ?? REQUEST_TIMEOUT_MS;
  const fetched: string[] = [];
  const get = async (url: string, maxBytes: number, accept: string) => {
    const res = await guardedFetch(env, url, { maxBytes, timeoutMs, headers: { Accept: accept } });
    fetched.push(res.url);
    return res;
  };

  try {
    const robots = await readRobots(domain, get);
    if (!robotsAllow(robots, "/"))
      throw new CrawlFailure("robots_disallowed", `robots.txt of ${domain} disallows our user agent`);

    const technologies = new TechnologyMatcher();
    const page = await openHomePage(`https://${domain}/`, get);
    const fetchedAt = new Date().toISOString();
    technologies.headers(page.headers);
    const body = cutAtCap(page);
    const facts = await extractPage(body.stream, page.url, technologies);
    const pageSource = { url: page.url, fetched_at: fetchedAt };

    const { cssTexts, manifest } = await readLinkedAssets(domain, robots, facts, get);
    const css = analyzeCss(facts.inlineCss);
    for (const sheet of cssTexts) if (sheet) analyzeCss(sheet.text, css);
    const discovered = assemble(facts, css, manifest, technologies, pageSource, cssTexts);
    if (options.model) await addEnrichment(options.model, domain, discovered, facts, page.url);
    return { ok: true, discovered, fetched, truncated: body.cut() };
  } catch (error) {
    if (error instanceof CrawlFailure) return { ok: false, code: error.code, error: error.message, fetched };
    if (error instanceof OutboundError) return { ok: false, code: error.code, error: error.message, fetched };
    throw error;
  }
}

const pathOf = (url: string) => {
  const u = new URL(url);
  return `${u.pathname}${u.search}`;
};

async function optional<T>(fn: () => Promise<T>): Promise<T | null> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof OutboundError) return null;
    throw error;
  }
}

type Get = (url: string, maxBytes: number, accept: string) => Promise<GuardedResponse>;

/**
 * RFC 9309: a 4xx (or a redirect we may not follow) means no rules; a 5xx means the site
 * asks not to be crawled now; a site that does not answer fails the crawl here.
 */
async function readRobots(domain: string, get: Get): Promise<Robots> {
  let res: GuardedResponse;
  try {
    res = await get(`https://${domain}/robots.txt`, ROBOTS_LIMIT, "text/plain");
  } catch (error) {
    if (error instanceof OutboundError && (error.code === "blocked_url" || error.code === "too_many_redirects"))
      return ALLOW_ALL;
    throw error;
  }
  if (res.status >= 500) {
    await res.cancel();
    return DISALLOW_ALL;
  }
  if (!res.ok) {
    await res.cancel();
    return ALLOW_ALL;
  }
  return parseRobots(await readText(res));
}

async function readManifestAt(url: string, get: Get) {
  return optional(async () => {
    const res = await get(url, MANIFEST_LIMIT, "application/manifest+json,application/json");
    if (!res.ok) return void (await res.cancel());
    let json: unknown;
    try {
      json = JSON.parse(await readText(res));
    } catch {
      return undefined;
    }
    return { url: res.url, at: new Date().toISOString(), ...readManifest(json, res.url) };
  });
}

function assemble(
  facts: PageFacts,
  css: ReturnType<typeof emptyCssFacts>,
  manifest: { url: string; at: string; icons: Icon[]; themeColor: string | null } | null | undefined,
  technologies: TechnologyMatcher,
  pageSource: Source,
  sheets: readonly ({ url: string; at: string } | null | undefined)[],
): DiscoveredProfile {
  const sources: DiscoveredProfile["sources"] = {};
  const summary = summaryOf(facts);
  if (summary) sources.summary = pageSource;

  const palette = paletteOf([facts.themeColor, manifest?.themeColor ?? null], css);
  const fonts = fontsOf(facts.googleFonts, css);
  // Styles come from the page (inline, theme-color, Google Fonts links) or its stylesheets:
  // the page is named when it contributed, else the first stylesheet read.
  const firstSheet = sheets.find((s) => s);
  const styleSource =
    facts.themeColor || facts.googleFonts.length || facts.inlineCss.trim() || !firstSheet
      ? pageSource
      : { url: firstSheet.url, fetched_at: firstSheet.at };
  if (palette.length) sources.palette = styleSource;
  if (fonts.length) sources.fonts = styleSource;

  const logo = logoOf([...facts.icons, ...(manifest?.icons ?? [])], facts.ogImage);
  if (logo)
    sources.logo_url =
      logo.from === "manifest" && manifest ? { url: manifest.url, fetched_at: manifest.at } : pageSource;

  const techs = technologies.result();
  if (techs.length) sources.technologies = pageSource;
  return {
    summary,
    palette,
    fonts,
    logo_url: logo?.url ?? null,
    industry: null,
    segment: null,
    size_hint: null,
    technologies: techs,
    sources,
  };
}
