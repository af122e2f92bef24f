/**
 * The one way the service reaches the network on a user's behalf (web reader, search,
 * crawler, MCP servers, avatars by URL). Its rules:
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

export const DEFAULT_MAX_BYTES = 2 * 1024 * 1024;
export const DEFAULT_TIMEOUT_MS = 10_000;
export const MAX_REDIRECTS = 3;

export type OutboundErrorCode =
  | "blocked_url"
  | "too_many_redirects"
  | "too_large"
  | "timeout"
  | "aborted"
  | "unreachable";

/** Every refusal or failure of the guarded fetch; `code` says which. */
export class OutboundError extends Error {
  constructor(
    readonly code: OutboundErrorCode,
    message: string,
  ) {
    super(message);
    this.name = "OutboundError";
  }
}
/** The URL (or a redirect target) breaks the rules above; nothing was sent to it. */
export class BlockedUrlError extends OutboundError {
  constructor(
    readonly url: string,
    reason: string,
  ) {
    super("blocked_url", `Refused to fetch ${url}: ${reason}`);
  }
}
export class TooManyRedirectsError extends OutboundError {
  constructor(url: string) {
    super("too_many_redirects", `${url} redirected more than ${MAX_REDIRECTS} times`);
  }
}
export class TooLargeError extends OutboundError {
  constructor(
    url: string,
    readonly maxBytes: number,
  ) {
    super("too_large", `The response from ${url} is larger than ${maxBytes} bytes`);
  }
}
export class TimeoutError extends OutboundError {
  constructor(
    url: string,
    readonly timeoutMs: number,
  ) {
    super("timeout", `${url} did not answer within ${timeoutMs} ms`);
  }
}

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

const LOCAL_SUFFIXES = [".localhost", ".local", ".internal", ".localdomain", ".home.arpa", ".lan", ".intranet"];

/** Why a host may not be fetched, or null when it may. `hostname` as `URL` gives it. */
export function blockedHostReason(hostname: string): string | null {
  const host = hostname.toLowerCase().replace(/\.+$/, "");
  if (host === "") return "no host";
  if (host.startsWith("[") || host.includes(":")) return "IP address literals are not allowed";
  const labels = host.split(".");
  const last = labels[labels.length - 1]!;
  // The URL parser turns every IPv4 form (2130706433, 0x7f.1, 0177.0.0.1) into dotted
  // decimal; a name whose last label is numeric is an IPv4 literal to any other parser too.
  if (/^(0x[0-9a-f]*|[0-9]+)$/i.test(last) || /^[0-9.]+$/.test(host)) return "IP address literals are not allowed";
  if (host === "localhost" || LOCAL_SUFFIXES.some((s) => host.endsWith(s))) return "local host names are not allowed";
  if (labels.length < 2) return "single-label host names are not allowed";
  return null;
}

/** `OUTBOUND_ORIGIN_MAP`: host (or origin) → the origin that serves it instead. */
function originMap(env: Env): Map<string, string> {
  if (!env.OUTBOUND_ORIGIN_MAP) return new Map();
  let parsed: unknown;
  try {
    parsed = JSON.parse(env.OUTBOUND_ORIGIN_MAP);
  } catch {
    throw new Error("OUTBOUND_ORIGIN_MAP is not valid JSON");
  }
  const map = new Map<string, string>();
  for (const [key, value] of Object.entries(parsed as Record<string, unknown>)) {
    if (typeof value === "string") map.set(key.toLowerCase().replace(/\/+$/, ""), value.replace(/\/+$/, ""));
  }
  return map;
}

/** Whether `OUTBOUND_ORIGIN_MAP` maps the host (local development and tests only). */
export function isMappedHost(env: Env, host: string): boolean {
  const map = originMap(env);
  const h = host.toLowerCase();
  return map.has(h) || map.has(`https://${h}`) || map.has(`http://${h}`);
}

const mappedOrigin = (map: Map<string, string>, url: URL) =>
  map.get(url.origin) ?? map.get(url.host) ?? map.get(url.hostname) ?? null;

/** Checks one URL against the rules and answers where to send the request. */
function target(raw: string, map: Map<string, string>): { url: URL; sendTo: string } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new BlockedUrlError(raw, "not a valid URL");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new BlockedUrlError(raw, "only http and https URLs are fetched");
  }
  if (url.username || url.password) throw new BlockedUrlError(raw, "URLs with credentials are not fetched");
  const mapped = mappedOrigin(map, url);
  if (mapped) return { url, sendTo: `${mapped}${url.pathname}${url.search}` };
  if (url.protocol === "http:") throw new BlockedUrlError(raw, "only https URLs are fetched");
  const reason = blockedHostReason(url.hostname);
  if (reason) throw new BlockedUrlError(raw, reason);
  return { url, sendTo: url.href };
}

export function userAgent(env: Env, origin?: string): string {
  const base = (env.BASE_URL || origin || "").replace(/\/+$/, "");
  return base ? `WorkspaceAgentService/1.0 (+${base})` : "WorkspaceAgentService/1.0";
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const NULL_BODY = new Set([101, 204, 205, 304]);
/** Caller headers that survive a redirect to another origin (credentials never do). */
const CROSS_ORIGIN_SAFE = new Set(["accept", "accept-language", "content-type"]);

/** A deadline shared by the request and the body: the time cap, or the caller's signal. */
function deadline(url: string, timeoutMs: number, outer?: AbortSignal) {
  const controller = new AbortController();
  let reason: OutboundError | null = null;
  const fail = (e: OutboundError) => {
    if (reason) return;
    reason = e;
    controller.abort(e);
  };
  const timer = setTimeout(() => fail(new TimeoutError(url, timeoutMs)), timeoutMs);
  const onOuter = () => fail(new OutboundError("aborted", `The request to ${url} was cancelled`));
  if (outer?.aborted) onOuter();
  outer?.addEventListener("abort", onOuter);
  return {
    signal: controller.signal,
    error: () => reason,
    /** Rejects with the deadline's error as soon as it passes, whatever `p` does. */
    race<T>(p: Promise<T>): Promise<T> {
      if (reason) {
        p.catch(() => {}); // settles later, unobserved: nobody waits for it any more
        return Promise.reject(reason);
      }
      return new Promise<T>((resolve, reject) => {
        const onAbort = () => reject(reason);
        controller.signal.addEventListener("abort", onAbort, { once: true });
        p.then(resolve, reject).finally(() => controller.signal.removeEventListener("abort", onAbort));
      });
    },
    done() {
      clearTimeout(timer);
      outer?.removeEventListener("abort", onOuter);
    },
  };
}

type Deadline = ReturnType<typeof deadline>;

/** The body, passed through while it stays under the cap and the deadline. */
function cappedBody(
  source: ReadableStream<Uint8Array> | null,
  url: string,
  maxBytes: number,
  time: Deadline,
  onError: (e: OutboundError) => void,
): ReadableStream<Uint8Array> {
  if (!source) {
    time.done();
    return new ReadableStream({ start: (c) => c.close() });
  }
  const reader = source.getReader();
  let total = 0;
  const stop = (controller: ReadableStreamDefaultController<Uint8Array>, e: OutboundError) => {
    time.done();
    onError(e);
    reader.cancel(e).catch(() => {});
    controller.error(e);
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await time.race(reader.read());
      } catch (e) {
        const err = e instanceof OutboundError ? e : new OutboundError("unreachable", `Reading ${url} failed`);
        return stop(controller, err);
      }
      if (chunk.done) {
        time.done();
        controller.close();
        return;
      }
      total += chunk.value.byteLength;
      if (total > maxBytes) return stop(controller, new TooLargeError(url, maxBytes));
      controller.enqueue(chunk.value);
    },
    cancel(reason) {
      time.done();
      return reader.cancel(reason);
    },
  });
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/**
 * Fetches `url` under the rules above. Resolves once the final response's headers arrived
 * (any status: the caller decides what a 404 means); its body is read through the caps.
 * Throws an `OutboundError` for a refused URL or redirect, a timeout or an unreachable host.
 */
export async function guardedFetch(env: Env, url: string, options: GuardedFetchOptions = {}): Promise<GuardedResponse> {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const map = originMap(env);
  let current = target(url, map);
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
        if (redirects >= MAX_REDIRECTS) throw new TooManyRedirectsError(url);
        const next = target(new URL(location, current.url).href, map);
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

      const finalUrl = current.url.href;
      const declared = Number(res.headers.get("Content-Length"));
      if (Number.isFinite(declared) && declared > maxBytes) {
        await res.body?.cancel().catch(() => {});
        throw new TooLargeError(finalUrl, maxBytes);
      }
      let failure: OutboundError | null = null;
      const stream = cappedBody(NULL_BODY.has(res.status) ? null : res.body, finalUrl, maxBytes, time, (e) => {
        failure = e;
      });
      const bytes = () => readAll(stream);
      return {
        url: finalUrl,
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
  } catch (e) {
    time.done();
    throw e;
  }
}
