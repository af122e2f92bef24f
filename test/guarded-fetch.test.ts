import { env } from "cloudflare:workers";
import { delay, HttpResponse, http } from "msw";
import { setupServer } from "msw/node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  BlockedUrlError,
  DEFAULT_MAX_BYTES,
  guardedFetch,
  type OutboundError,
  TimeoutError,
  TooLargeError,
  TooManyRedirectsError,
} from "../src/platform/guarded-fetch";
import { blockedHostReason } from "../src/platform/outbound-rules";

// The outside world, faked: every request the helper is allowed to make lands here, and
// any request it should never have made fails the test (onUnhandledRequest: "error").
const seen: { url: string; headers: Headers; method: string }[] = [];
const server = setupServer(
  http.all("https://public.test/*", ({ request }) => {
    seen.push({ url: request.url, headers: request.headers, method: request.method });
    return undefined;
  }),
  http.get("https://public.test/page", () => HttpResponse.text("hello")),
  http.get("https://public.test/hop/:n", ({ params }) => {
    const n = Number(params.n);
    return n === 0 ? HttpResponse.text("arrived") : HttpResponse.redirect(`https://public.test/hop/${n - 1}`, 302);
  }),
  http.get(
    "https://public.test/relative",
    () => new HttpResponse(null, { status: 301, headers: { Location: "/page" } }),
  ),
  http.get("https://public.test/to-private", () =>
    HttpResponse.redirect("http://169.254.169.254/latest/meta-data", 302),
  ),
  http.get("https://public.test/to-localhost", () => HttpResponse.redirect("https://localhost/admin", 307)),
  http.get("https://public.test/to-other", () => HttpResponse.redirect("https://other.test/echo", 302)),
  http.get("https://other.test/echo", ({ request }) =>
    HttpResponse.json({ token: request.headers.get("X-Subscription-Token"), accept: request.headers.get("Accept") }),
  ),
  http.get("https://public.test/big-declared", () =>
    HttpResponse.text("x".repeat(1000), { headers: { "Content-Length": String(DEFAULT_MAX_BYTES + 1) } }),
  ),
  http.get("https://public.test/big-streamed", () => {
    // No Content-Length: the cap must hold while the body streams.
    const chunk = new Uint8Array(64 * 1024).fill(97);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent >= 64) return c.close();
        sent++;
        c.enqueue(chunk);
      },
    });
    return new HttpResponse(stream, { headers: { "Content-Type": "text/plain" } });
  }),
  http.get("https://public.test/slow-headers", async () => {
    await delay(2_000);
    return HttpResponse.text("late");
  }),
  http.get("https://public.test/slow-body", () => {
    const stream = new ReadableStream<Uint8Array>({
      async start(c) {
        c.enqueue(new TextEncoder().encode("first part "));
        await delay(2_000);
        c.enqueue(new TextEncoder().encode("second part"));
        c.close();
      },
    });
    return new HttpResponse(stream);
  }),
  http.post("https://public.test/submit", async ({ request }) => HttpResponse.json({ got: await request.text() })),
  http.get("http://127.0.0.1:8794/*", ({ request }) =>
    HttpResponse.json({ path: new URL(request.url).pathname, ua: request.headers.get("User-Agent") }),
  ),
);

beforeAll(() => server.listen({ onUnhandledRequest: "error" }));
afterEach(() => {
  seen.length = 0;
  server.resetHandlers();
});
afterAll(() => server.close());

const withVars = (vars: Record<string, string>) => ({ ...env, ...vars }) as Env;

async function refused(url: string, vars: Record<string, string> = {}) {
  const err = await guardedFetch(withVars(vars), url).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err, url).toBeInstanceOf(BlockedUrlError);
  return err as BlockedUrlError;
}

describe("guardedFetch: which URLs it refuses before sending anything", () => {
  it.each([
    "http://127.0.0.1/",
    "https://127.0.0.1/",
    "https://10.0.0.8/",
    "https://169.254.169.254/latest/meta-data",
    "https://2130706433/", // 127.0.0.1 as one decimal number
    "https://0x7f000001/", // hex
    "https://0177.0.0.1/", // octal
    "https://0x7f.1/", // mixed short form
    "https://127.1/",
    "https://[::1]/",
    "https://[::ffff:127.0.0.1]/",
    "https://[fd00::1]:8443/x",
    "https://localhost/",
    "https://LOCALHOST./",
    "https://api.localhost/",
    "https://printer.local/",
    "https://metadata.google.internal/computeMetadata/v1/",
    "https://intranet/",
    "http://public.test/page", // plain http is only for mapped hosts
    "ftp://public.test/file",
    "file:///etc/passwd",
    "https://user:pass@public.test/page",
    "not a url",
  ])("refuses %s", async (url) => {
    const err = await refused(url);
    expect(err.code).toBe("blocked_url");
    expect(err.message).toMatch(/^Refused to fetch/);
    expect(seen).toEqual([]);
  });

  it("lets public names through", () => {
    for (const host of ["public.test", "example.com", "docs.example.co.uk", "localhost-tools.example.com"]) {
      expect(blockedHostReason(host), host).toBeNull();
    }
  });
});

describe("guardedFetch: requests it makes", () => {
  it("fetches a public https page with the service's User-Agent", async () => {
    const res = await guardedFetch(withVars({ BASE_URL: "https://agents.example.com" }), "https://public.test/page");
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("hello");
    expect(seen[0]!.headers.get("User-Agent")).toBe("WorkspaceAgentService/1.0 (+https://agents.example.com)");
  });

  it("uses the caller's origin in the User-Agent when BASE_URL is not set", async () => {
    await (await guardedFetch(env, "https://public.test/page", { origin: "https://svc.example" })).text();
    expect(seen[0]!.headers.get("User-Agent")).toBe("WorkspaceAgentService/1.0 (+https://svc.example)");
  });

  it("follows up to 3 redirects, re-checking each, and reports the final URL", async () => {
    const res = await guardedFetch(env, "https://public.test/hop/3");
    expect(await res.text()).toBe("arrived");
    expect(res.url).toBe("https://public.test/hop/0");
    expect(seen.map((s) => s.url)).toEqual([3, 2, 1, 0].map((n) => `https://public.test/hop/${n}`));
  });

  it("resolves a relative Location against the page", async () => {
    const res = await guardedFetch(env, "https://public.test/relative");
    expect(res.url).toBe("https://public.test/page");
    expect(await res.text()).toBe("hello");
  });

  it("refuses a fourth redirect", async () => {
    const err = await guardedFetch(env, "https://public.test/hop/4").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TooManyRedirectsError);
    expect((err as OutboundError).code).toBe("too_many_redirects");
    expect(seen).toHaveLength(4);
  });

  it.each([
    ["/to-private", "http://169.254.169.254/latest/meta-data"],
    ["/to-localhost", "https://localhost/admin"],
  ])("refuses a redirect from %s to %s without following it", async (path, to) => {
    const err = await guardedFetch(env, `https://public.test${path}`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BlockedUrlError);
    expect((err as BlockedUrlError).url).toBe(to);
    expect(seen.map((s) => s.url)).toEqual([`https://public.test${path}`]);
  });

  it("drops the caller's credentials on a redirect to another origin", async () => {
    const res = await guardedFetch(env, "https://public.test/to-other", {
      headers: { "X-Subscription-Token": "secret", Accept: "application/json" },
    });
    expect(await res.json()).toEqual({ token: null, accept: "application/json" });
    expect(seen[0]!.headers.get("X-Subscription-Token")).toBe("secret");
  });

  it("sends a body with other methods", async () => {
    const res = await guardedFetch(env, "https://public.test/submit", { method: "POST", body: "payload" });
    expect(await res.json()).toEqual({ got: "payload" });
  });
});

describe("guardedFetch: caps", () => {
  it("refuses a body whose declared length is over the cap, before reading it", async () => {
    const err = await guardedFetch(env, "https://public.test/big-declared").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TooLargeError);
    expect((err as TooLargeError).maxBytes).toBe(DEFAULT_MAX_BYTES);
  });

  it("stops a streamed body at the cap (4 MiB sent, 2 MiB allowed)", async () => {
    const res = await guardedFetch(env, "https://public.test/big-streamed");
    expect(res.status).toBe(200);
    const err = await res.bytes().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TooLargeError);
    expect(res.failure()).toBe(err);
  });

  it("honours a caller's smaller and larger caps", async () => {
    const small = guardedFetch(env, "https://public.test/page", { maxBytes: 4 }).then((r) => r.text());
    expect(await small.catch((e: unknown) => e)).toBeInstanceOf(TooLargeError);
    const large = await guardedFetch(env, "https://public.test/big-streamed", { maxBytes: 4 * 1024 * 1024 });
    expect((await large.bytes()).byteLength).toBe(4 * 1024 * 1024);
  });

  it("times out waiting for the headers", async () => {
    const started = Date.now();
    const err = await guardedFetch(env, "https://public.test/slow-headers", { timeoutMs: 200 }).catch(
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as OutboundError).code).toBe("timeout");
    expect(Date.now() - started).toBeLessThan(1_500);
  });

  it("times out while the body is still arriving", async () => {
    const res = await guardedFetch(env, "https://public.test/slow-body", { timeoutMs: 300 });
    const err = await res.text().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TimeoutError);
  });

  it("stops when the caller's own signal aborts", async () => {
    const controller = new AbortController();
    const pending = guardedFetch(env, "https://public.test/slow-headers", { signal: controller.signal });
    controller.abort();
    const err = await pending.catch((e: unknown) => e);
    expect((err as OutboundError).code).toBe("aborted");
  });
});

describe("guardedFetch: OUTBOUND_ORIGIN_MAP", () => {
  const MAP = { OUTBOUND_ORIGIN_MAP: JSON.stringify({ "acme.test": "http://127.0.0.1:8794" }) };

  it("sends a mapped host's requests to the mapped origin, over plain http too", async () => {
    for (const url of ["http://acme.test/about?x=1", "https://acme.test/about?x=1"]) {
      const res = await guardedFetch(withVars({ ...MAP, BASE_URL: "https://svc.example" }), url);
      expect(res.url).toBe(url);
      expect(await res.json()).toEqual({ path: "/about", ua: "WorkspaceAgentService/1.0 (+https://svc.example)" });
    }
  });

  it("still refuses unmapped private hosts and plain http elsewhere", async () => {
    await refused("http://127.0.0.1:8794/about", MAP);
    await refused("http://other.test/", MAP);
  });
});
