import { guardedFetch } from "../platform/guarded-fetch";
import { pdfText } from "./documents";
import { clip, htmlMainText } from "./extract";

export type PageReading = { url: string; title: string | null; content: string; truncated: boolean };

const TEXTUAL = /^(text\/(plain|markdown|csv)|application\/(json|xml)|text\/xml)/;

/**
 * The stream, ended rather than errored when it fails: the rewriter then finishes quietly,
 * and the caller reports the guarded fetch's own error (too large, timeout) from `failure()`.
 */
function endOnError(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      } catch {
        controller.close();
      }
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

/**
 * The main text of a web page, fetched through the guarded fetch (its caps hold) and read
 * by `htmlMainText` as it streams; plain-text answers (text, Markdown, CSV, JSON) as they are.
 */
export async function readUrl(
  env: Env,
  url: string,
  opts: { signal?: AbortSignal; origin?: string } = {},
): Promise<PageReading> {
  const res = await guardedFetch(env, url, {
    headers: { Accept: "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5" },
    signal: opts.signal,
    origin: opts.origin,
  });
  if (!res.ok) {
    await res.cancel();
    throw new Error(`${res.url} answered with HTTP ${res.status}`);
  }
  const type = (res.headers.get("Content-Type") ?? "").toLowerCase();
  if (type === "" || type.includes("html")) {
    const page = await htmlMainText(endOnError(res.body));
    const failure = res.failure();
    if (failure) throw failure;
    if (!page.text) throw new Error(`${res.url} has no readable text`);
    return { url: res.url, title: page.title, content: page.text, truncated: page.truncated };
  }
  if (TEXTUAL.test(type)) {
    const { text, truncated } = clip(await res.text());
    return { url: res.url, title: null, content: text, truncated };
  }
  if (type.startsWith("application/pdf")) {
    const { text, truncated } = clip((await pdfText(env, await res.bytes())).text);
    return { url: res.url, title: null, content: text, truncated };
  }
  await res.cancel();
  throw new Error(`${res.url} is ${type.split(";")[0]}, not a page read_url can read`);
}
