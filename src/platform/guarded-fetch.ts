/**
 * The one way the service reaches the network on a user's behalf (web reader, search,
 * crawler, MCP servers, avatars by URL). The rules (docs/skills.md, "Outbound requests"):
 *
 * - `https` only; plain `http` only for a host mapped by `OUTBOUND_ORIGIN_MAP`;
 * - hosts that are IP literals (v4 in any of the dotted, decimal, octal or hex forms the URL
 *   parser accepts, and v6) or local names (`localhost`, `*.localhost`, `*.local`,
 *   `*.internal`, single-label names, ...) are refused before any request is made;
 * - at most 3 redirects, each target checked by the same rules (`redirect: "manual"`);
 * - the body is capped while it streams (2 MiB unless the caller says otherwise) and the
 *   whole exchange, body included, is capped in time (10 s unless stated);
 * - `User-Agent: WorkspaceAgentService/1.0 (+{BASE_URL})`.
 *
 * Names are checked as written: a Worker cannot resolve DNS itself, and Cloudflare's own
 * fetch refuses private addresses for names that resolve to them.
 */

import { cappedBody, type Deadline, deadline, readAll } from "./capped-body";
import { OutboundError, TooLargeError, TooManyRedirectsError } from "./outbound-errors";
import { checkedTarget, originMap, userAgent } from "./outbound-rules";

export {
  BlockedUrlError,
  OutboundError,
  type OutboundErrorCode,
  TimeoutError,
  TooLargeError,
  TooManyRedirectsError,
} from "./outbound-errors";

export const DEFAULT_MAX_BYTES = 2 * 1024 * 1024;
export const DEFAULT_TIMEOUT_MS = 10_000;
export const MAX_REDIRECTS = 3;

export type GuardedFetchOptions = {
  method?: string;
  headers?: Record<string, string>;
  /** Replayable on a 307/308 redirect, so only text or bytes. */
  body?: string | Uint8Array;
  /** Body cap in bytes (default 2 MiB). */
  maxBytes?: number;
  /** Time cap for the whole exchange, body included (default 10 s). */
  timeoutMs?: number;
  /** The caller's own deadline (a turn's), on top of the time cap. */
  signal?: AbortSignal;
  /** The service's origin for the User-Agent when BASE_URL is not configured. */
  origin?: string;
};

/** A response whose body is read through the caps; reading it may throw an `OutboundError`. */
export type GuardedResponse = {
  /** The URL that answered, after redirects (as the caller would see it, before any origin mapping). */
  url: string;
  status: number;
  ok: boolean;
  headers: Headers;
  /** The capped body stream (empty for bodiless statuses). Read it once. */
  body: ReadableStream<Uint8Array>;
  bytes(): Promise<Uint8Array>;
  text(): Promise<string>;
  json(): Promise<unknown>;
  /** The caps' error when the body stream failed, to recover it from a consumer that wrapped it. */
  failure(): OutboundError | null;
  /** Stops reading and releases the connection and timer. */
  cancel(): Promise<void>;
};

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const NULL_BODY = new Set([101, 204, 205, 304]);
/** Caller headers that survive a redirect to another origin (credentials never do). */
const CROSS_ORIGIN_SAFE = new Set(["accept", "accept-language", "content-type"]);

/**
 * Fetches `url` under the rules above. Resolves once the final response's headers arrived
 * (any status: the caller decides what a 404 means); its body is read through the caps.
 * Throws an `OutboundError` for a refused URL or redirect, a timeout or an unreachable host.
 */
export async function guardedFetch(env: Env, url: string, options: GuardedFetchOptions = {}): Promise<GuardedResponse> {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const map = originMap(env);
  let current = checkedTarget(url, map);
  const time = deadline(current.url.href, timeoutMs, options.signal);
  let method = (options.method ?? "GET").toUpperCase();
  let body = options.body;
  let headers: Record<string, string> = { ...options.headers };

  try {
    for (let redirects = 0; ; redirects++) {
      let res: Response;
      try {
        res = await time.race(
          fetch(current.sendTo, {
            method,
            headers: { ...headers, "User-Agent": userAgent(env, options.origin) },
            body: method === "GET" || method === "HEAD" ? undefined : body,
            redirect: "manual",
            signal: time.signal,
          }),
        );
      } catch (e) {
        if (e instanceof OutboundError) throw e;
        throw new OutboundError("unreachable", `${current.url.href} could not be reached`);
      }
      const location = res.headers.get("Location");
      if (REDIRECTS.has(res.status) && location) {
        await res.body?.cancel().catch(() => {});
        if (redirects >= MAX_REDIRECTS) throw new TooManyRedirectsError(url, MAX_REDIRECTS);
        const next = checkedTarget(new URL(location, current.url).href, map);
        if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === "POST")) {
          method = "GET";
          body = undefined;
        }
        if (next.url.origin !== current.url.origin) {
          headers = Object.fromEntries(Object.entries(headers).filter(([k]) => CROSS_ORIGIN_SAFE.has(k.toLowerCase())));
        }
        current = next;
        continue;
      }

      return await guardedResponse(res, current.url.href, maxBytes, time);
    }
  } catch (e) {
    time.done();
    throw e;
  }
}

/** The final response, its body read through the caps (a declared length over the cap is refused at once). */
async function guardedResponse(res: Response, url: string, maxBytes: number, time: Deadline): Promise<GuardedResponse> {
  const declared = Number(res.headers.get("Content-Length"));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await res.body?.cancel().catch(() => {});
    throw new TooLargeError(url, maxBytes);
  }
  let failure: OutboundError | null = null;
  const stream = cappedBody(NULL_BODY.has(res.status) ? null : res.body, url, maxBytes, time, (e) => {
    failure = e;
  });
  const bytes = () => readAll(stream);
  return {
    url,
    status: res.status,
    ok: res.ok,
    headers: res.headers,
    body: stream,
    bytes,
    text: async () => new TextDecoder().decode(await bytes()),
    json: async () => JSON.parse(new TextDecoder().decode(await bytes())) as unknown,
    failure: () => failure,
    cancel: () => stream.cancel().catch(() => {}),
  };
}
