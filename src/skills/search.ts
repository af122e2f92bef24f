import { guardedFetch } from "../platform/guarded-fetch";
import { htmlToText } from "../platform/html";

/** One search hit as the model sees it. */
export type SearchResult = { title: string; url: string; snippet: string };

export const MAX_RESULTS = 8;

type BraveAnswer = { web?: { results?: { title?: unknown; url?: unknown; description?: unknown }[] } };

/** Brave marks matches with `<strong>`; the model gets plain text. */
const plain = (s: unknown) => (typeof s === "string" ? htmlToText(s) : "");

/**
 * Searches the web through the configured provider (Brave Search API shape:
 * `GET {SEARCH_API_URL}?q=…&count=…` with `X-Subscription-Token`), through the guarded fetch.
 */
export async function webSearch(
  env: Env,
  query: string,
  opts: { signal?: AbortSignal; origin?: string } = {},
): Promise<SearchResult[]> {
  if (!env.SEARCH_API_URL || !env.SEARCH_API_KEY) throw new Error("Web search is not configured in this deployment");
  const url = new URL(env.SEARCH_API_URL);
  url.searchParams.set("q", query);
  url.searchParams.set("count", String(MAX_RESULTS));
  const res = await guardedFetch(env, url.href, {
    headers: { Accept: "application/json", "X-Subscription-Token": env.SEARCH_API_KEY },
    signal: opts.signal,
    origin: opts.origin,
  });
  if (!res.ok) {
    await res.cancel();
    if (res.status === 429) throw new Error("The search provider is rate limiting requests; try again shortly");
    throw new Error(`The search provider answered with HTTP ${res.status}`);
  }
  let body: BraveAnswer;
  try {
    body = (await res.json()) as BraveAnswer;
  } catch (e) {
    if (e instanceof SyntaxError) throw new Error("The search provider answered with something that is not JSON");
    throw e;
  }
  return (body.web?.results ?? [])
    .map((r) => ({ title: plain(r.title), url: typeof r.url === "string" ? r.url : "", snippet: plain(r.description) }))
    .filter((r) => r.url.startsWith("http"))
    .slice(0, MAX_RESULTS);
}
