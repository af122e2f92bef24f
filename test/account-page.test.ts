import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MeSchema } from "../src/account/schemas";
import { call, expectProblem, ORIGIN, parse } from "./support/api";
import { auditEvents } from "./support/audit";
import { Browser, csrfOf, type Form } from "./support/pages";
import { addUser, PASSWORD, signupWorkspace } from "./support/seed";

const SIGN_IN = "/v1/signin?return_to=%2Fv1%2Faccount";

/** A browser signed in through the sign-in form. */
async function signedIn(email: string) {
  const b = new Browser();
  const res = await b.request("POST", "/v1/signin", { email, password: PASSWORD, csrf_token: await b.csrf() });
  expect(res.status).toBe(303);
  return b;
}

type Token = { id: string; user_id: string; name: string; scopes: string; expires_at: string | null };
const tokensOf = async (userId: string) =>
  (
    await env.DB.prepare("SELECT id, user_id, name, scopes, expires_at FROM api_tokens WHERE user_id = ? ORDER BY id")
      .bind(userId)
      .all<Token>()
  ).results;

/** Posts the token form the way the page does, from our own origin, with the page's CSRF token. */
async function createOnPage(b: Browser, form: Form, headers: Record<string, string> = { Origin: ORIGIN }) {
  const csrf_token = await b.csrf("/v1/account");
  return b.request("POST", "/v1/account/tokens", { csrf_token, ...form }, headers);
}

describe("GET /v1/account", () => {
  it("without a session, 303s to sign-in and back", async () => {
    const res = await call("GET", "/v1/account");
    expect(res.status).toBe(303);
    expect(res.headers.get("Location")).toBe(SIGN_IN);
    const stale = await call("GET", "/v1/account", { headers: { Cookie: `svc_session=${"A".repeat(43)}` } });
    expect(stale.status).toBe(303);
    expect(stale.headers.get("Location")).toBe(SIGN_IN);
  });

  it("with a session, shows who you are, the workspace, the API reference and a token form limited to your role", async () => {
    const ws = await signupWorkspace();
    const b = await signedIn(ws.email);
    const res = await b.request("GET", "/v1/account");
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toContain("text/html");
    expect(res.headers.get("X-Frame-Options")).toBe("DENY");
    expect(res.headers.get("Content-Security-Policy")).toContain("frame-ancestors 'none'");
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    const html = await res.text();
    for (const text of [ws.email, "Ada Admin", "admin", ws.workspace.name, ws.workspace.slug])
      expect(html).toContain(text);
    expect(html).toContain('href="/v1/docs"');
    expect(html).toContain('action="/v1/account/tokens"');
    expect(html).toContain('action="/v1/signout"');
    expect(csrfOf(html)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(html).toContain('name="scopes" value="admin"');
    expect(html).toContain('name="scopes" value="memory:write"');
    expect(html).not.toContain('value="svc:computer"');
    expect(html).not.toMatch(/checked/);
  });

  it("offers a member no admin scope", async () => {
    const ws = await signupWorkspace();
    const member = await addUser(ws.adminToken, "member", ["agents:read"]);
    const html = await (await (await signedIn(member.email)).request("GET", "/v1/account")).text();
    expect(html).toContain(member.email);
    expect(html).toContain("<dd>member</dd>");
    expect(html).toContain('value="agents:read"');
    expect(html).not.toContain('value="admin"');
  });

  it("escapes what users typed", async () => {
    const ws = await signupWorkspace(`<script>alert("x")</script> & Co`);
    const html = await (await (await signedIn(ws.email)).request("GET", "/v1/account")).text();
    expect(html).not.toContain("<script>");
    expect(html).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; Co");
  });
});

describe("POST /v1/account/tokens", () => {
  it("creates a personal access token for the signed-in user and shows it once", async () => {
    const ws = await signupWorkspace();
    const b = await signedIn(ws.email);
    const res = await createOnPage(b, {
      name: "  My laptop  ",
      scopes: ["agents:read", "conversations:write"],
      expires_in_days: "30",
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    const html = await res.text();
    const secrets = html.match(/svc_pat_[A-Za-z0-9_-]{43}/g) ?? [];
    expect(secrets).toHaveLength(1);
    const token = secrets[0]!;

    const [row] = (await tokensOf(ws.user.id)).filter((t) => t.name === "My laptop");
    expect(row).toMatchObject({ user_id: ws.user.id, scopes: JSON.stringify(["agents:read", "conversations:write"]) });
    const days = (Date.parse(row!.expires_at!) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThanOrEqual(30);

    const me = await parse(await call("GET", "/v1/api/me", { token }), MeSchema);
    expect(me).toMatchObject({ auth: "pat", user: { id: ws.user.id }, scopes: ["agents:read", "conversations:write"] });

    // The same event as POST /v1/api/admin/tokens writes; the actor is the signed-in person.
    const [event] = await auditEvents(ws.workspace.id, "token.create");
    expect(event).toMatchObject({
      outcome: "success",
      actor_kind: "user",
      actor_id: ws.user.id,
      target: `token:${row!.id}`,
      intent: "create",
    });
    expect(event!.details).toEqual({
      name: "My laptop",
      scopes: ["agents:read", "conversations:write"],
      user_id: ws.user.id,
      expires_at: row!.expires_at,
    });
    expect(JSON.stringify(event)).not.toContain(token);

    // Shown once: the account page never shows it again.
    expect(await (await b.request("GET", "/v1/account")).text()).not.toContain(token);
  });

  it("creates a token that never expires when no expiry is given", async () => {
    const ws = await signupWorkspace();
    const res = await createOnPage(await signedIn(ws.email), {
      name: "ci",
      scopes: "agents:read",
      expires_in_days: "",
    });
    expect(res.status).toBe(200);
    const [row] = (await tokensOf(ws.user.id)).filter((t) => t.name === "ci");
    expect(row?.expires_at).toBeNull();
  });

  it.each([
    ["a foreign Origin", { Origin: "https://evil.example" }],
    ["a sibling subdomain's Origin", { Origin: "https://files.svc.test" }],
    ["no Origin and Sec-Fetch-Site: same-site", { "Sec-Fetch-Site": "same-site" }],
  ])("from %s is 403 cross_origin_request and creates nothing", async (_, headers) => {
    const ws = await signupWorkspace();
    const b = await signedIn(ws.email);
    const before = await tokensOf(ws.user.id);
    const res = await createOnPage(b, { name: "stolen", scopes: "admin" }, headers);
    await expectProblem(res, 403, "cross_origin_request");
    expect(await tokensOf(ws.user.id)).toEqual(before);
  });

  it("without the form's CSRF token, or with a forged one, is 403 and creates nothing", async () => {
    const ws = await signupWorkspace();
    const b = await signedIn(ws.email);
    await b.csrf("/v1/account");
    const before = await tokensOf(ws.user.id);
    const form = { name: "x", scopes: "agents:read" };
    const missing = await b.request("POST", "/v1/account/tokens", form, { Origin: ORIGIN });
    expect(missing.status).toBe(403);
    expect(await missing.text()).toContain("Your form expired");
    const forged = await b.request("POST", "/v1/account/tokens", { ...form, csrf_token: "A".repeat(43) });
    expect(forged.status).toBe(403);
    expect(await tokensOf(ws.user.id)).toEqual(before);
  });

  it.each([
    ["no name", { name: " ", scopes: "agents:read" }, "Give the token a name."],
    ["no scope", { name: "x" }, "Choose at least one scope."],
    ["an unknown scope", { name: "x", scopes: "svc:computer" }, "Choose scopes from the list."],
    ["a zero expiry", { name: "x", scopes: "agents:read", expires_in_days: "0" }, "at least 1 day"],
    ["a word for an expiry", { name: "x", scopes: "agents:read", expires_in_days: "soon" }, "number of days"],
  ])("with %s answers the form again (400) and creates nothing", async (_, form, message) => {
    const ws = await signupWorkspace();
    const b = await signedIn(ws.email);
    const before = await tokensOf(ws.user.id);
    const res = await createOnPage(b, form as Form);
    expect(res.status).toBe(400);
    const html = await res.text();
    expect(html).toContain('role="alert"');
    expect(html).toContain(message);
    expect(await tokensOf(ws.user.id)).toEqual(before);
  });

  it("refuses a member a scope beyond the role (400) and creates nothing", async () => {
    const ws = await signupWorkspace();
    const member = await addUser(ws.adminToken, "member", ["agents:read"]);
    const b = await signedIn(member.email);
    const before = await tokensOf(member.user.id);
    const res = await createOnPage(b, { name: "x", scopes: ["agents:read", "admin"] });
    expect(res.status).toBe(400);
    const html = await res.text();
    expect(html).toContain("cannot hold: admin");
    expect(html).toContain('value="agents:read" checked');
    expect(await tokensOf(member.user.id)).toEqual(before);
  });

  it("answers junk, oversized and mistyped posts with a 4xx, never a 5xx, and creates nothing", async () => {
    const ws = await signupWorkspace();
    const b = await signedIn(ws.email);
    const csrf = await b.csrf("/v1/account");
    const before = await tokensOf(ws.user.id);
    const KB100 = "x".repeat(100_000);
    const bodies: [string, string, string | undefined][] = [
      ["JSON", JSON.stringify({ csrf_token: csrf, name: "x", scopes: ["agents:read"] }), "application/json"],
      ["broken form", "%%%%=&&&", "application/x-www-form-urlencoded"],
      ["100 KB name", `csrf_token=${csrf}&name=${KB100}&scopes=agents:read`, "application/x-www-form-urlencoded"],
      [
        "10 000 scopes",
        `csrf_token=${csrf}&name=x${"&scopes=agents:read".repeat(10_000)}`,
        "application/x-www-form-urlencoded",
      ],
      ["huge expiry", `csrf_token=${csrf}&name=x&scopes=agents:read&expires_in_days=1e308`, undefined],
      [
        "a file for a field",
        `--x\r\nContent-Disposition: form-data; name="csrf_token"\r\n\r\n${csrf}\r\n` +
          `--x\r\nContent-Disposition: form-data; name="name"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nhi\r\n--x--\r\n`,
        "multipart/form-data; boundary=x",
      ],
      [
        "truncated multipart",
        '--x\r\nContent-Disposition: form-data; name="name"\r\n\r\n',
        "multipart/form-data; boundary=x",
      ],
      ["no body", "", undefined],
      ["over 1 MiB", `csrf_token=${csrf}&name=${"x".repeat(1024 * 1024 + 10)}`, "application/x-www-form-urlencoded"],
    ];
    for (const [label, rawBody, type] of bodies) {
      const headers: Record<string, string> = {
        Cookie: [...b.cookies].map(([k, v]) => `${k}=${v}`).join("; "),
        Origin: ORIGIN,
        ...(type ? { "Content-Type": type } : {}),
      };
      const res = await call("POST", "/v1/account/tokens", { rawBody, headers });
      expect(res.status, label).toBeGreaterThanOrEqual(400);
      expect(res.status, label).toBeLessThan(500);
    }
    expect(await tokensOf(ws.user.id)).toEqual(before);
  });

  it("without a session, 303s to sign-in and creates nothing", async () => {
    const ws = await signupWorkspace();
    const before = await tokensOf(ws.user.id);
    const res = await new Browser().request("POST", "/v1/account/tokens", { name: "x", scopes: "agents:read" });
    expect(res.status).toBe(303);
    expect(res.headers.get("Location")).toBe(SIGN_IN);
    expect(await tokensOf(ws.user.id)).toEqual(before);
  });
});

describe("POST /v1/signout from the account page", () => {
  it("revokes the session server-side and clears the cookie", async () => {
    const ws = await signupWorkspace();
    const b = await signedIn(ws.email);
    const session = b.cookies.get("svc_session")!;
    expect((await call("GET", "/v1/api/me", { headers: { Cookie: `svc_session=${session}` } })).status).toBe(200);

    const res = await b.request("POST", "/v1/signout", undefined, { Origin: ORIGIN });
    expect(res.status).toBe(303);
    expect(res.headers.get("Location")).toBe("/v1/signin");
    expect(res.headers.getSetCookie().find((c) => c.startsWith("svc_session="))).toMatch(/Max-Age=0/);
    expect(b.cookies.has("svc_session")).toBe(false);

    const row = await env.DB.prepare("SELECT revoked_at FROM sessions WHERE user_id = ?")
      .bind(ws.user.id)
      .first<{ revoked_at: string | null }>();
    expect(row?.revoked_at).not.toBeNull();
    // The old cookie, replayed, is no credential any more.
    const replay = { headers: { Cookie: `svc_session=${session}` } };
    expect((await call("GET", "/v1/api/me", replay)).status).toBe(401);
    const page = await call("GET", "/v1/account", replay);
    expect(page.status).toBe(303);
    expect(page.headers.get("Location")).toBe(SIGN_IN);
  });
});
