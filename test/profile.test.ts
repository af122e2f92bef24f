import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { MockLanguageModelV4 } from "ai/test";
import { eq } from "drizzle-orm";
import { delay, HttpResponse, http } from "msw";
import { setupServer } from "msw/node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { AREAS } from "../src/app";
import { businessProfiles } from "../src/db/schema";
import { registryOf } from "../src/http/area";
import { db } from "../src/platform/db";
import { profileArea } from "../src/profile";
import { crawlSite, PAGE_LIMIT } from "../src/profile/crawler";
import { CRAWL_QUEUE, runCrawl } from "../src/profile/crawls";
import { checkDomain } from "../src/profile/domain";
import { inRefreshWindow, refreshProfiles } from "../src/profile/refresh";
import { ALLOW_ALL, DISALLOW_ALL, parseRobots, robotsAllow } from "../src/profile/robots";
import { BusinessProfileSchema } from "../src/profile/schemas";
import { NO_PROFILE } from "../src/profile/service";
import { FIXTURES } from "./fixtures/profile";
import { call, expectProblem, parse } from "./support/api";
import { auditEvents } from "./support/audit";
import { mockTextReply } from "./support/scripted-llm";
import { addUser, signupWorkspace } from "./support/seed";

// ---- the outside world: each site as its server would answer ----

const requested: string[] = [];
const html = (body: string, headers: Record<string, string> = {}) =>
  new HttpResponse(body, { headers: { "Content-Type": "text/html; charset=utf-8", ...headers } });
const css = (body: string) => new HttpResponse(body, { headers: { "Content-Type": "text/css" } });
const robots = (body: string) => HttpResponse.text(body);
const notFound = () => new HttpResponse("not found", { status: 404 });

let hugePulled = 0;

const server = setupServer(
  http.all("*", ({ request }) => {
    requested.push(request.url);
    return undefined;
  }),
  // WordPress
  http.get("https://rosemaryrye.com/robots.txt", () =>
    robots("User-agent: *\nDisallow: /wp-admin/\nAllow: /wp-admin/admin-ajax.php\n"),
  ),
  http.get("https://rosemaryrye.com/", () =>
    html(FIXTURES.wordpress.html, {
      Link: '<https://rosemaryrye.com/wp-json/>; rel="https://api.w.org/"',
      Server: "nginx/1.24.0",
    }),
  ),
  http.get("https://rosemaryrye.com/wp-includes/css/dist/block-library/style.min.css", () =>
    css(".wp-block{margin:0}"),
  ),
  http.get("https://rosemaryrye.com/wp-content/themes/bakery/style.css", () => css(FIXTURES.wordpress.css)),
  http.get("https://rosemaryrye.com/wp-content/plugins/woocommerce/assets/css/woocommerce.css", notFound),
  // Next.js on Vercel
  http.get("https://ledgerly.io/robots.txt", notFound),
  http.get("https://ledgerly.io/", () =>
    html(FIXTURES.nextjs.html, { "X-Powered-By": "Next.js", "x-vercel-id": "sfo1::abc", Server: "Vercel" }),
  ),
  http.get("https://ledgerly.io/_next/static/css/8d2e1f6a9a3b7c1e.css", () => css(FIXTURES.nextjs.css)),
  http.get(
    "https://ledgerly.io/manifest.webmanifest",
    () => new HttpResponse(FIXTURES.nextjs.manifest, { headers: { "Content-Type": "application/manifest+json" } }),
  ),
  // Shopify
  http.get("https://tidepoolgear.com/robots.txt", () =>
    robots("User-agent: *\nDisallow: /cart\nDisallow: /checkout\n"),
  ),
  http.get("https://tidepoolgear.com/", () =>
    html(FIXTURES.shopify.html, { "x-shopid": "5531", "powered-by": "Shopify" }),
  ),
  http.get("https://tidepoolgear.com/cdn/shop/t/12/assets/base.css", () => css(FIXTURES.shopify.css)),
  // a plain static page
  http.get("https://hallamprice.co.uk/robots.txt", notFound),
  http.get("https://hallamprice.co.uk/", () => html(FIXTURES.static.html, { Server: "Apache/2.4.57" })),
  http.get("https://hallamprice.co.uk/style.css", () => css(FIXTURES.static.css)),
  // CSS-variable palette and Google Fonts
  http.get("https://northwind.studio/robots.txt", () => robots("User-agent: BadBot\nDisallow: /\n")),
  http.get("https://northwind.studio/", () => html(FIXTURES.brand.html, { "cf-ray": "8a1b2c3d4e5f-SJC" })),
  http.get("https://northwind.studio/assets/site.css", () => css(FIXTURES.brand.css)),
  // robots.txt that shuts our user agent out (and only ours)
  http.get("https://private-notes.com/robots.txt", () =>
    robots("User-agent: *\nAllow: /\n\nUser-agent: WorkspaceAgentService\nDisallow: /\n"),
  ),
  http.get("https://private-notes.com/", () => html("<p>must never be fetched</p>")),
  // a home page that redirects into the private network
  http.get("https://sneaky-redirect.com/robots.txt", notFound),
  http.get("https://sneaky-redirect.com/", () => HttpResponse.redirect("http://10.0.0.5/admin", 302)),
  // a 20 MiB home page, streamed without a length
  http.get("https://huge-page.com/robots.txt", notFound),
  http.get("https://huge-page.com/", () => {
    const head = new TextEncoder().encode(
      '<html><head><title>Huge</title><meta name="description" content="A page far larger than anyone should serve."><meta name="generator" content="Hugo 0.125"></head><body>',
    );
    const filler = new TextEncoder().encode(`<p>${"lorem ipsum ".repeat(5_400)}</p>`); // ~64 KiB
    const total = 20 * 1024 * 1024;
    hugePulled = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (hugePulled === 0) {
          hugePulled += head.byteLength;
          return c.enqueue(head);
        }
        if (hugePulled >= total) return c.close();
        hugePulled += filler.byteLength;
        c.enqueue(filler);
      },
    });
    return new HttpResponse(stream, { headers: { "Content-Type": "text/html" } });
  }),
  // a site that never answers
  http.get("https://silent-site.com/*", async () => {
    await delay("infinite");
    return HttpResponse.text("never");
  }),
);

beforeAll(() => server.listen({ onUnhandledRequest: "error" }));
afterEach(() => {
  requested.length = 0;
});
afterAll(() => server.close());

const reply = mockTextReply;

async function crawlOk(domain: string, options: Parameters<typeof crawlSite>[2] = {}) {
  const result = await crawlSite(env, domain, options);
  if (!result.ok) throw new Error(`crawl of ${domain} failed: ${result.error}`);
  return result;
}

// ---- extraction on the fixtures ----

describe("crawling the fixtures", () => {
  it("a WordPress site: generator, wp-content and the wp-json header; at most 3 same-site stylesheets", async () => {
    const { discovered } = await crawlOk("rosemaryrye.com");
    expect(discovered.summary).toBe(
      "Rosemary & Rye is a neighbourhood bakery in Portland baking naturally leavened sourdough, pastries and seasonal pies every morning.",
    );
    const names = discovered.technologies.map((t) => t.name);
    expect(names.slice(0, 1)).toEqual(["WordPress"]);
    expect(discovered.technologies[0]!.confidence).toBeGreaterThan(0.99);
    expect(names).toEqual(expect.arrayContaining(["jQuery", "Google Analytics", "WooCommerce", "Nginx"]));
    for (let i = 1; i < discovered.technologies.length; i++)
      expect(discovered.technologies[i - 1]!.confidence).toBeGreaterThanOrEqual(discovered.technologies[i]!.confidence);
    // the brand colour variable first, then the theme's most used chromatic colours
    expect(discovered.palette[0]).toBe("#8b5e34");
    expect(discovered.palette).toContain("#c2410c");
    expect(discovered.palette).not.toContain("#ffffff");
    expect(discovered.fonts.slice(0, 2).sort()).toEqual(["Lora", "Playfair Display"]);
    expect(discovered.logo_url).toBe("https://rosemaryrye.com/wp-content/uploads/2024/01/cropped-logo-192x192.png");
    expect(discovered.industry).toBeNull();
    expect(discovered.sources.summary).toEqual({ url: "https://rosemaryrye.com/", fetched_at: expect.any(String) });
    // three stylesheets, never the fourth; robots first
    expect(requested[0]).toBe("https://rosemaryrye.com/robots.txt");
    expect(requested.filter((u) => u.endsWith(".css") || u.includes(".css?"))).toHaveLength(3);
    expect(requested.some((u) => u.includes("print.css"))).toBe(false);
  });

  it("a Next.js site on Vercel: headers, /_next/ scripts, __NEXT_DATA__, theme-color and the manifest", async () => {
    const { discovered } = await crawlOk("ledgerly.io");
    expect(discovered.summary).toBe(
      "Ledgerly automates bookkeeping, invoicing and payroll for creative agencies with 10 to 200 people.",
    );
    const names = discovered.technologies.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["Next.js", "Vercel", "React", "Stripe", "Intercom"]));
    expect(names.indexOf("Next.js")).toBeLessThan(names.indexOf("React"));
    expect(discovered.palette.slice(0, 2)).toEqual(["#4f46e5", "#06b6d4"]);
    expect(discovered.fonts[0]).toBe("Inter");
    // an SVG icon scales to any size: it beats the manifest's 512 px PNG
    expect(discovered.logo_url).toBe("https://ledgerly.io/icon.svg");
    expect(requested).toContain("https://ledgerly.io/manifest.webmanifest");
  });

  it("a Shopify store: its headers and CDN, Open Graph description, CSS custom-property fonts", async () => {
    const { discovered } = await crawlOk("tidepoolgear.com");
    expect(discovered.summary).toBe("Sustainable wetsuits, leashes and surf wax, shipped from Santa Cruz.");
    expect(discovered.technologies[0]).toEqual({ name: "Shopify", confidence: 1 });
    expect(discovered.palette[0]).toBe("#1d4ed8");
    expect(discovered.palette).toContain("#f97316");
    expect(discovered.fonts).toEqual(expect.arrayContaining(["Assistant", "Archivo Black"]));
    expect(discovered.logo_url).toBe("https://tidepoolgear.com/cdn/shop/files/favicon_32x32.png?v=1699");
  });

  it("a plain static page: the first real paragraph is the summary, the server header the only clue", async () => {
    const { discovered } = await crawlOk("hallamprice.co.uk");
    expect(discovered.summary).toBe(
      "We are a firm of chartered building surveyors serving Sheffield and South Yorkshire since 1987, with a team of twelve.",
    );
    expect(discovered.technologies).toEqual([{ name: "Apache", confidence: 0.85 }]);
    expect(discovered.palette).toEqual(["#2e5d34", "#6b4c9a"]);
    expect(discovered.fonts).toEqual(["Verdana"]);
    expect(discovered.logo_url).toBe("https://hallamprice.co.uk/favicon.ico");
    expect(discovered.sources.palette?.url).toBe("https://hallamprice.co.uk/style.css");
  });

  it("a CSS-variable palette and Google Fonts: variables in order (brand names first), Google families first", async () => {
    const { discovered } = await crawlOk("northwind.studio");
    expect(discovered.summary).toContain("independent design studio");
    expect(discovered.palette.slice(0, 4)).toEqual(["#0f766e", "#f59e0b", "#1f2937", "#fffbeb"]);
    expect(discovered.palette).toContain("#e11d48");
    expect(discovered.fonts.slice(0, 2)).toEqual(["Fraunces", "Work Sans"]);
    expect(discovered.technologies.map((t) => t.name)).toEqual(
      expect.arrayContaining(["Google Fonts", "Plausible", "Cloudflare"]),
    );
    expect(discovered.logo_url).toBe("https://northwind.studio/assets/logo-mark.svg");
  });

  it("enriches through the model's structured output when a model is given", async () => {
    const model = new MockLanguageModelV4({
      doGenerate: async () => reply(JSON.stringify({ industry: "Bakery", segment: "B2C local", size_hint: "11-50" })),
    });
    const { discovered } = await crawlOk("rosemaryrye.com", { model });
    expect([discovered.industry, discovered.segment, discovered.size_hint]).toEqual(["Bakery", "B2C local", "11-50"]);
    expect(discovered.sources.industry?.url).toBe("https://rosemaryrye.com/");
    const prompt = JSON.stringify(model.doGenerateCalls[0]!.prompt);
    expect(prompt).toContain("Bread worth waking up for");
    expect(prompt).not.toContain("header chrome");
    expect(model.doGenerateCalls[0]!.responseFormat).toMatchObject({ type: "json" });
  });

  it("a model that answers outside the schema leaves the enrichment empty and the crawl ok", async () => {
    const model = new MockLanguageModelV4({ doGenerate: async () => reply('{"industry": 42, "size_hint": "huge"}') });
    const { discovered } = await crawlOk("ledgerly.io", { model });
    expect([discovered.industry, discovered.segment, discovered.size_hint]).toEqual([null, null, null]);
  });
});

describe("what the crawler refuses or survives", () => {
  it("honours robots.txt for our user agent: nothing but robots.txt is fetched", async () => {
    const result = await crawlSite(env, "private-notes.com");
    expect(result).toMatchObject({ ok: false, code: "robots_disallowed" });
    expect(requested).toEqual(["https://private-notes.com/robots.txt"]);
  });

  it("a robots.txt group for another bot does not apply to us", async () => {
    await crawlOk("northwind.studio");
  });

  it("a redirect into a private address is refused before any request goes there", async () => {
    const result = await crawlSite(env, "sneaky-redirect.com");
    expect(result).toMatchObject({ ok: false, code: "blocked_url" });
    if (!result.ok) expect(result.error).toContain("10.0.0.5");
    expect(requested.some((u) => u.includes("10.0.0.5"))).toBe(false);
  });

  it("a 20 MiB page is cut at the 2 MiB cap and what came before still counts", async () => {
    const result = await crawlOk("huge-page.com");
    expect(result.truncated).toBe(true);
    expect(result.discovered.summary).toBe("A page far larger than anyone should serve.");
    expect(result.discovered.technologies.map((t) => t.name)).toContain("Hugo");
    expect(hugePulled).toBeLessThan(PAGE_LIMIT + 4 * 64 * 1024);
  });

  it("a site that never answers fails at the time cap", async () => {
    const started = Date.now();
    const result = await crawlSite(env, "silent-site.com", { timeoutMs: 300 });
    expect(result).toMatchObject({ ok: false, code: "timeout" });
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe("robots.txt rules", () => {
  it("longest match wins, allow wins a tie, wildcards and anchors apply", () => {
    const r = parseRobots(
      "User-agent: other\nDisallow: /\n\nUser-agent: *\nDisallow: /private\nAllow: /private/public\nDisallow: /*.pdf$\n",
    );
    expect(robotsAllow(r, "/")).toBe(true);
    expect(robotsAllow(r, "/private/x")).toBe(false);
    expect(robotsAllow(r, "/private/public/x")).toBe(true);
    expect(robotsAllow(r, "/files/a.pdf")).toBe(false);
    expect(robotsAllow(r, "/files/a.pdf?x")).toBe(true);
    expect(robotsAllow(parseRobots("User-agent: WorkspaceAgentService/1.0\nDisallow: /\n"), "/")).toBe(false);
    expect(robotsAllow(parseRobots("User-agent: *\nDisallow:\n"), "/")).toBe(true);
  });

  // RFC 9309 §2.2.2: "The most specific match is the match that has the most octets. […] If an
  // allow rule and a disallow rule are equivalent, then the allow rule SHOULD be used."
  it("the rule with the most octets wins, wildcards count as written, and allow wins a tie", () => {
    const r = parseRobots(
      "User-agent: *\nDisallow: /page\nAllow: /page\nDisallow: /shop/*/cart\nAllow: /shop/*/cart/help\nAllow: /$\nDisallow: /\n",
    );
    expect(robotsAllow(r, "/page")).toBe(true);
    expect(robotsAllow(r, "/shop/eu/cart")).toBe(false);
    expect(robotsAllow(r, "/shop/eu/cart/help")).toBe(true);
    expect(robotsAllow(r, "/")).toBe(true);
    expect(robotsAllow(r, "/about")).toBe(false);
    // `/*x` (3 octets) is more specific than `/x` (2) though both match
    const w = parseRobots("User-agent: *\nAllow: /x\nDisallow: /*x\n");
    expect(robotsAllow(w, "/x")).toBe(false);
  });

  it("`*` matches any run of characters, `$` anchors only at the end", () => {
    const r = parseRobots("User-agent: *\nDisallow: /*/private/*.html$\nDisallow: /a$b\n");
    expect(robotsAllow(r, "/team/private/notes.html")).toBe(false);
    expect(robotsAllow(r, "/team/private/notes.html?v=2")).toBe(true);
    expect(robotsAllow(r, "/team/public/notes.html")).toBe(true);
    expect(robotsAllow(r, "/a$b")).toBe(false);
    expect(robotsAllow(r, "/a")).toBe(true);
  });

  // RFC 9309 §2.2.1: "Crawlers MUST use case-insensitive matching to find the group that matches
  // the product token and then obey the rules of the group. If there is more than one group
  // matching the user-agent, the matching groups' rules MUST be combined into one group".
  it("our groups, matched without case and combined, replace the `*` group", () => {
    const r = parseRobots(
      "User-agent: *\nDisallow: /\n\nUser-agent: otherbot\nUser-agent: workspaceagentservice\nDisallow: /a # not a\n\r\nUser-agent: WORKSPACEAGENTSERVICE/2.0\r\nDisallow: /b\r\n",
    );
    expect(robotsAllow(r, "/")).toBe(true);
    expect(robotsAllow(r, "/a")).toBe(false);
    expect(robotsAllow(r, "/b")).toBe(false);
    expect(robotsAllow(r, "/c")).toBe(true);
  });

  // RFC 9309 §2.2.2: "Octets in the URI and robots.txt paths outside the range of the ASCII coded
  // character set, and those in the reserved range defined by RFC 3986, MUST be percent-encoded".
  it("compares paths percent-encoded, as the crawler's URLs are", () => {
    const r = parseRobots("User-agent: *\nDisallow: /foo/bar/ツ\nDisallow: /%7euser/\n");
    expect(robotsAllow(r, "/foo/bar/%E3%83%84")).toBe(false);
    expect(robotsAllow(r, "/%7Euser/x")).toBe(false);
  });

  it("the stand-ins for an absent and a failing robots.txt", () => {
    expect(robotsAllow(ALLOW_ALL, "/anything")).toBe(true);
    expect(robotsAllow(DISALLOW_ALL, "/")).toBe(false);
  });
});

// ---- domains ----

describe("domain normalization", () => {
  it("drops scheme, credentials, path, query, port and www., lowercases and converts IDNA", () => {
    const cases: [string, string][] = [
      ["  Acme.COM  ", "acme.com"],
      ["https://www.acme.com/about?x=1#top", "acme.com"],
      ["http://user:pw@shop.acme.co.uk:8443/cart", "shop.acme.co.uk"],
      ["www.acme.com.", "acme.com"],
      ["bücher.de", "xn--bcher-kva.de"],
      ["//acme.com/path", "acme.com"],
    ];
    for (const [raw, domain] of cases) expect(checkDomain(env, raw), raw).toEqual({ ok: true, domain });
  });

  it("refuses IP literals, single labels, local and reserved names, and over-long names", () => {
    const bad: [string, RegExp][] = [
      ["", /empty/],
      ["   ", /empty/],
      ["127.0.0.1", /IP/],
      ["https://10.0.0.1/", /IP/],
      ["2130706433", /IP/],
      ["0x7f.1", /IP/],
      ["[::1]", /IP/],
      ["2001:db8::1", /IP/],
      ["http://[fe80::1]:8080/", /IP/],
      ["localhost", /localhost/],
      ["intranet", /single label/],
      ["printer.local", /reserved/],
      ["db.internal", /reserved/],
      ["acme.test", /reserved/],
      ["shop.example", /reserved/],
      ["router.home.arpa", /reserved/],
      [`${"a".repeat(60)}.${"b".repeat(60)}.${"c".repeat(60)}.${"d".repeat(60)}.${"e".repeat(60)}.com`, /253/],
      ["-acme.com", /not a valid/],
      ["acme..com", /not a valid/],
      ["acme_corp.com", /not a valid/],
    ];
    for (const [raw, reason] of bad) {
      const check = checkDomain(env, raw);
      expect(check.ok, raw).toBe(false);
      if (!check.ok) expect(check.reason, raw).toMatch(reason);
    }
  });

  it("a reserved name mapped by OUTBOUND_ORIGIN_MAP is accepted (local development)", () => {
    const mapped = { ...env, OUTBOUND_ORIGIN_MAP: JSON.stringify({ "acme.test": "http://127.0.0.1:8794" }) };
    expect(checkDomain(mapped, "https://www.acme.test/")).toEqual({ ok: true, domain: "acme.test" });
    expect(checkDomain(mapped, "other.test").ok).toBe(false);
  });
});

// ---- the API, the queue and the refresh ----

type Ws = Awaited<ReturnType<typeof signupWorkspace>>;

const getProfile = async (token: string) =>
  parse(await call("GET", "/v1/api/business-profile", { token }), BusinessProfileSchema);
const putProfile = (token: string, body: unknown) => call("PUT", "/v1/api/business-profile", { token, body });
const rowOf = (workspaceId: string) =>
  db(env).select().from(businessProfiles).where(eq(businessProfiles.workspaceId, workspaceId)).get();

/** Waits until the queue's consumer has finished the crawl the profile waits for. */
async function settled(ws: Ws) {
  for (let i = 0; i < 150; i++) {
    const row = await rowOf(ws.workspace.id);
    if (row && row.crawlId === null && row.crawlStatus !== "pending") return row;
    await delay(100);
  }
  throw new Error("the crawl did not finish");
}

/** The workspace's newest `profile.crawl` event once it has `count` of them (the append follows the write). */
async function crawlEvents(ws: Ws, count: number) {
  for (let i = 0; i < 100; i++) {
    const events = await auditEvents(ws.workspace.id, "profile.crawl");
    if (events.length >= count) return events;
    await delay(100);
  }
  throw new Error(`fewer than ${count} profile.crawl events`);
}

describe("GET and PUT /v1/api/business-profile", () => {
  let ws: Ws;
  beforeAll(async () => {
    ws = await signupWorkspace();
  });

  it("answers an empty profile before anything is set, to any member", async () => {
    const member = await addUser(ws.adminToken, "member", ["agents:read"]);
    const empty = await getProfile(member.token);
    expect(empty).toEqual(NO_PROFILE);
    expect(empty).toMatchObject({ domain: null, summary: null, crawl_status: "never", sources: {} });
    await expectProblem(await putProfile(member.token, { summary: "x" }), 403);
    await expectProblem(await call("GET", "/v1/api/business-profile"), 401);
  });

  it("a new domain is normalized, pending and crawled by the queue consumer; the crawl is audited", async () => {
    const res = await putProfile(ws.adminToken, { domain: "HTTPS://www.RosemaryRye.com/menu" });
    const pending = await parse(res, BusinessProfileSchema);
    expect(pending).toMatchObject({ domain: "rosemaryrye.com", crawl_status: "pending", summary: null });
    const [update] = await auditEvents(ws.workspace.id, "profile.update");
    expect(update).toMatchObject({ target: `workspace:${ws.workspace.id}`, intent: "update" });
    expect(update!.details).toEqual({ fields: ["domain"], cleared: [], domain_changed: true });

    // the Worker's queue handler runs the message the PUT queued
    const done = await settled(ws).then(() => getProfile(ws.adminToken));
    expect(done.crawl_status).toBe("ok");
    expect(done.summary).toContain("neighbourhood bakery");
    expect(done.technologies[0]!.name).toBe("WordPress");
    expect(done.crawled_at).not.toBeNull();
    expect(done.sources.summary?.url).toBe("https://rosemaryrye.com/");
    const [crawl] = await crawlEvents(ws, 1);
    expect(crawl).toMatchObject({ outcome: "success", actor_kind: "system", intent: "crawl" });
    expect(crawl!.details).toMatchObject({ domain: "rosemaryrye.com", crawl_status: "ok" });
  });

  it("the area's consumer acks what it ran, drops stale and malformed messages, never refetches", async () => {
    const other = await signupWorkspace();
    const now = new Date().toISOString();
    await db(env).insert(businessProfiles).values({
      workspaceId: other.workspace.id,
      domain: "hallamprice.co.uk",
      crawlStatus: "pending",
      crawlId: "crawl-1",
      crawlRequestedAt: now,
      updatedAt: now,
    });
    const message = { workspace_id: other.workspace.id, domain: "hallamprice.co.uk", crawl_id: "crawl-1" };
    const batch = createMessageBatch<unknown>(CRAWL_QUEUE, [
      { id: "m1", timestamp: new Date(), attempts: 1, body: message },
      { id: "m2", timestamp: new Date(), attempts: 1, body: { nonsense: true } },
      { id: "m3", timestamp: new Date(), attempts: 1, body: { ...message, crawl_id: "crawl-0" } },
    ]);
    const ctx = createExecutionContext();
    await profileArea.queues![CRAWL_QUEUE]!(batch, env, registryOf(AREAS));
    const result = await getQueueResult(batch, ctx);
    expect(result.explicitAcks.sort()).toEqual(["m1", "m2", "m3"]);
    expect(result.retryMessages).toEqual([]);
    expect((await getProfile(other.adminToken)).summary).toContain("chartered building surveyors");
    expect(requested.filter((u) => u === "https://hallamprice.co.uk/")).toHaveLength(1);
    // the same message again (a redelivery) finds nothing to do
    expect(await runCrawl(env, message)).toBe("stale");
  });

  it("overrides win, persist across a crawl, and clearing one shows the discovered value again", async () => {
    const res = await putProfile(ws.adminToken, {
      summary: "The best bakery in the Pacific Northwest.",
      palette: ["#ABC", "#123456"],
      industry: "Food & beverage",
      size_hint: "11-50",
    });
    const p = await parse(res, BusinessProfileSchema);
    expect(p.summary).toBe("The best bakery in the Pacific Northwest.");
    expect(p.palette).toEqual(["#aabbcc", "#123456"]);
    expect(p.enrichment).toEqual({ industry: "Food & beverage", segment: null, size_hint: "11-50" });
    expect(p.overridden_fields.sort()).toEqual(["industry", "palette", "size_hint", "summary"]);
    const events = await auditEvents(ws.workspace.id, "profile.update");
    expect(events[0]!.details).toEqual({
      fields: ["summary", "palette", "industry", "size_hint"],
      cleared: [],
      domain_changed: false,
    });
    expect(JSON.stringify(events[0])).not.toContain("Pacific Northwest");

    // a refresh re-crawls: the overrides stay
    await db(env)
      .update(businessProfiles)
      .set({ crawlRequestedAt: "2020-01-01T00:00:00.000Z" })
      .where(eq(businessProfiles.workspaceId, ws.workspace.id));
    const before = await rowOf(ws.workspace.id);
    expect(await refreshProfiles(env, { scheduledTime: Date.parse("2030-01-07T03:15:00Z") })).toBeGreaterThanOrEqual(1); // a Monday
    const refreshed = await settled(ws);
    expect(refreshed.crawledAt! > before!.crawledAt!).toBe(true);
    const after = await getProfile(ws.adminToken);
    expect(after.summary).toBe("The best bakery in the Pacific Northwest.");
    expect(after.palette).toEqual(["#aabbcc", "#123456"]);
    expect(after.overridden_fields.sort()).toEqual(["industry", "palette", "size_hint", "summary"]);

    const cleared = await parse(
      await putProfile(ws.adminToken, { summary: null, palette: null }),
      BusinessProfileSchema,
    );
    expect(cleared.summary).toContain("neighbourhood bakery");
    expect(cleared.palette[0]).toBe("#8b5e34");
    expect(cleared.enrichment.industry).toBe("Food & beverage");
    expect(cleared.overridden_fields.sort()).toEqual(["industry", "size_hint"]);
    expect((await auditEvents(ws.workspace.id, "profile.update"))[0]!.details).toMatchObject({
      fields: [],
      cleared: ["summary", "palette"],
    });
  });

  it("the same domain again queues nothing; a crawl of a domain changed meanwhile is dropped", async () => {
    const same = await parse(await putProfile(ws.adminToken, { domain: "rosemaryrye.com" }), BusinessProfileSchema);
    expect(same.crawl_status).toBe("ok");

    await putProfile(ws.adminToken, { domain: "ledgerly.io" });
    const first = await rowOf(ws.workspace.id);
    const pending = await parse(await putProfile(ws.adminToken, { domain: "tidepoolgear.com" }), BusinessProfileSchema);
    expect(pending).toMatchObject({ domain: "tidepoolgear.com", crawl_status: "pending", summary: null });
    expect(pending.enrichment.industry).toBe("Food & beverage"); // overrides survive a domain change
    expect(
      await runCrawl(env, { workspace_id: ws.workspace.id, domain: "ledgerly.io", crawl_id: first!.crawlId! }),
    ).toBe("stale");
    await settled(ws);
    const done = await getProfile(ws.adminToken);
    expect(done.domain).toBe("tidepoolgear.com");
    expect(done.technologies[0]!.name).toBe("Shopify");
    const events = await crawlEvents(ws, 3);
    expect(events.some((e) => e.details.domain === "ledgerly.io")).toBe(false);
  });

  it("a failed crawl is `error` with the reason, and audited as such", async () => {
    await putProfile(ws.adminToken, { domain: "private-notes.com" });
    await settled(ws);
    const p = await getProfile(ws.adminToken);
    expect(p.crawl_status).toBe("error");
    expect(p.last_error).toMatch(/robots\.txt/);
    const [event] = await crawlEvents(ws, 4);
    expect(event).toMatchObject({ outcome: "error" });
    expect(event!.details).toMatchObject({ crawl_status: "error", error_code: "robots_disallowed" });
  });

  it("refuses every invalid domain with 400 invalid_domain and changes nothing", async () => {
    const before = await getProfile(ws.adminToken);
    for (const domain of ["127.0.0.1", "[::1]", "localhost", "intranet", "nas.local", "acme.test", "x".repeat(260)]) {
      const problem = await expectProblem(await putProfile(ws.adminToken, { domain }), 400, "invalid_domain");
      expect(problem.detail, domain).toMatch(/^Invalid domain: /);
    }
    await expectProblem(await putProfile(ws.adminToken, { palette: ["red"] }), 400, "validation_failed");
    await expectProblem(await putProfile(ws.adminToken, { size_hint: "huge" }), 400, "validation_failed");
    await expectProblem(await putProfile(ws.adminToken, { logo_url: "javascript:alert(1)" }), 400);
    await expectProblem(await putProfile(ws.adminToken, { unknown: 1 }), 400);
    expect(await getProfile(ws.adminToken)).toEqual(before);
  });

  it("removing the domain forgets the crawl but keeps the overrides", async () => {
    const p = await parse(await putProfile(ws.adminToken, { domain: null }), BusinessProfileSchema);
    expect(p).toMatchObject({ domain: null, crawl_status: "never", technologies: [], last_error: null });
    expect(p.enrichment.industry).toBe("Food & beverage");
  });

  it("another workspace sees only its own profile", async () => {
    const other = await signupWorkspace();
    expect((await getProfile(other.adminToken)).domain).toBeNull();
    expect((await getProfile(other.adminToken)).overridden_fields).toEqual([]);
  });
});

describe("the weekly refresh", () => {
  it("acts only in the Monday 03:00 UTC hour, queues only stale profiles, once", async () => {
    const ws = await signupWorkspace();
    await putProfile(ws.adminToken, { domain: "hallamprice.co.uk" });
    await settled(ws);
    expect(inRefreshWindow(Date.parse("2030-01-07T03:00:00Z"))).toBe(true);
    expect(inRefreshWindow(Date.parse("2030-01-07T04:00:00Z"))).toBe(false);
    expect(inRefreshWindow(Date.parse("2030-01-08T03:00:00Z"))).toBe(false);
    expect(await refreshProfiles(env, { scheduledTime: Date.parse("2030-01-08T03:00:00Z") })).toBe(0);

    // crawled just now: not stale yet, even inside the window (the latest Monday 03:10 UTC before now)
    const window = new Date();
    window.setUTCHours(3, 10, 0, 0);
    while (window.getUTCDay() !== 1 || window.getTime() > Date.now()) window.setUTCDate(window.getUTCDate() - 1);
    const fresh = await rowOf(ws.workspace.id);
    await refreshProfiles(env, { scheduledTime: window.getTime() });
    expect((await rowOf(ws.workspace.id))!.crawlRequestedAt).toBe(fresh!.crawlRequestedAt);

    await db(env)
      .update(businessProfiles)
      .set({ crawlRequestedAt: "2020-01-01T00:00:00.000Z" })
      .where(eq(businessProfiles.workspaceId, ws.workspace.id));
    expect(await refreshProfiles(env, { scheduledTime: window.getTime() })).toBeGreaterThanOrEqual(1);
    const queued = await rowOf(ws.workspace.id);
    expect(queued!.crawlRequestedAt! > "2020-01-01T00:00:00.000Z").toBe(true);
    expect(queued!.crawlStatus).toBe("ok"); // the status stays while the refresh's crawl runs
    const requestedAt = queued!.crawlRequestedAt;
    await refreshProfiles(env, { scheduledTime: window.getTime() + 60_000 });
    expect((await rowOf(ws.workspace.id))!.crawlRequestedAt).toBe(requestedAt);
  });
});
