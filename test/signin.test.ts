import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MeSchema } from "../src/account/schemas";
import { call, parse } from "./support/api";
import { auditEvents } from "./support/audit";
import { Browser } from "./support/pages";
import { PASSWORD, signupWorkspace } from "./support/seed";
import { unique } from "./support/unique";

/** The sign-in form posted as a person does: the seed password and a fresh CSRF token. */
const signInAs = async (b: Browser, email: string, extra: { return_to?: string } = {}) =>
  b.request("POST", "/v1/signin", { email, password: PASSWORD, ...extra, csrf_token: await b.csrf() });

describe("browser sign-in", () => {
  it("renders a form with the documented fields and frame-busting headers", async () => {
    const res = await call("GET", "/v1/signin?return_to=/v1/oauth/authorize%3Fx%3D1");
    expect(res.status).toBe(200);
    expect(res.headers.get("X-Frame-Options")).toBe("DENY");
    expect(res.headers.get("Content-Security-Policy")).toContain("frame-ancestors 'none'");
    const html = await res.text();
    for (const field of ["email", "password", "return_to", "csrf_token"]) expect(html).toContain(`name="${field}"`);
    expect(html).toContain('value="/v1/oauth/authorize?x=1"');
  });

  it("signs in, sets an HttpOnly Secure Lax session cookie, 303s to a same-origin return_to, and signs out", async () => {
    const ws = await signupWorkspace();
    const b = new Browser();
    const res = await signInAs(b, ws.email, { return_to: "/v1/api/me?x=1" });
    expect(res.status).toBe(303);
    expect(res.headers.get("Location")).toBe("/v1/api/me?x=1");
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith("svc_session="))!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/Secure/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).toMatch(/Path=\//);

    const me = await parse(await b.request("GET", "/v1/api/me"), MeSchema);
    expect(me).toMatchObject({ auth: "session", user: { id: ws.user.id } });

    const sessionValue = b.cookies.get("svc_session")!;
    const stored = await env.DB.prepare("SELECT token_hash FROM sessions WHERE user_id = ?")
      .bind(ws.user.id)
      .first<{ token_hash: string }>();
    expect(stored?.token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(stored?.token_hash).not.toBe(sessionValue);

    const out = await b.request("POST", "/v1/signout");
    expect(out.status).toBe(303);
    const replay = await call("GET", "/v1/api/me", { headers: { Cookie: `svc_session=${sessionValue}` } });
    expect(replay.status).toBe(401);
  });

  it.each(["https://evil.example/", "//evil.example/x", "/\\evil.example", "javascript:alert(1)"])(
    "never redirects off-site (return_to=%s)",
    async (returnTo) => {
      const ws = await signupWorkspace();
      const res = await signInAs(new Browser(), ws.email, { return_to: returnTo });
      expect(res.status).toBe(303);
      expect(res.headers.get("Location")).toBe("/v1/account");
    },
  );

  it("without a return_to, sends the person to the signed-in account page", async () => {
    const ws = await signupWorkspace();
    const b = new Browser();
    const res = await signInAs(b, ws.email);
    expect(res.status).toBe(303);
    expect(res.headers.get("Location")).toBe("/v1/account");
    expect((await b.request("GET", "/v1/account")).status).toBe(200);
  });

  it("gives the same answer for a wrong password and an unknown email, and sets no session", async () => {
    const ws = await signupWorkspace();
    const b = new Browser();
    const csrf_token = await b.csrf();
    const wrong = await b.request("POST", "/v1/signin", { email: ws.email, password: "wrong password!", csrf_token });
    const unknown = await b.request("POST", "/v1/signin", {
      email: `nobody-${unique()}@example.com`,
      password: "wrong password!",
      csrf_token,
    });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    const msg = (html: string) => /role="alert">([^<]*)</.exec(html)?.[1];
    expect(msg(await wrong.text())).toBe(msg(await unknown.text()));
    expect(b.cookies.has("svc_session")).toBe(false);
  });

  it("records sign-in, refused sign-in and sign-out in the workspace's log, without the password or the session", async () => {
    const ws = await signupWorkspace();
    const b = new Browser();
    const wrong = await b.request("POST", "/v1/signin", {
      email: ws.email,
      password: "wrong password!",
      csrf_token: await b.csrf(),
    });
    expect(wrong.status).toBe(401);
    const ok = await signInAs(b, ws.email);
    expect(ok.status).toBe(303);
    const session = b.cookies.get("svc_session")!;
    const sessionId = (await env.DB.prepare("SELECT id FROM sessions WHERE user_id = ? AND revoked_at IS NULL")
      .bind(ws.user.id)
      .first<{ id: string }>())!.id;
    expect((await b.request("POST", "/v1/signout")).status).toBe(303);

    const signins = await auditEvents(ws.workspace.id, "session.signin");
    expect(signins.map((e) => [e.outcome, e.actor_kind, e.target, e.intent, e.details])).toEqual([
      ["success", "user", `session:${sessionId}`, "signin", { email: ws.email }],
      ["denied", "user", `user:${ws.user.id}`, "signin", { email: ws.email, reason: "bad_credentials" }],
    ]);
    const [signout] = await auditEvents(ws.workspace.id, "session.signout");
    expect(signout).toMatchObject({
      outcome: "success",
      actor_id: ws.user.id,
      target: `session:${sessionId}`,
      intent: "signout",
      details: {},
    });
    const text = JSON.stringify(await auditEvents(ws.workspace.id));
    expect(text).not.toContain(PASSWORD);
    expect(text).not.toContain("wrong password!");
    expect(text).not.toContain(session);

    // Signing out without a live session changes nothing and records nothing.
    expect((await b.request("POST", "/v1/signout")).status).toBe(303);
    expect(await auditEvents(ws.workspace.id, "session.signout")).toHaveLength(1);
  });

  it("requires the CSRF token", async () => {
    const ws = await signupWorkspace();
    const b = new Browser();
    await b.csrf();
    const missing = await b.request("POST", "/v1/signin", { email: ws.email, password: PASSWORD });
    expect(missing.status).toBe(403);
    const forged = await b.request("POST", "/v1/signin", {
      email: ws.email,
      password: PASSWORD,
      csrf_token: "A".repeat(43),
    });
    expect(forged.status).toBe(403);
    expect(b.cookies.has("svc_session")).toBe(false);
  });

  it("rate limits sign-in attempts per address with 429", async () => {
    const ip = "203.0.113.99";
    const statuses: number[] = [];
    for (let i = 0; i < 22; i++) {
      const res = await call("POST", "/v1/signin", {
        headers: { "CF-Connecting-IP": ip, "Content-Type": "application/x-www-form-urlencoded" },
        rawBody: "email=a%40example.com&password=x",
      });
      statuses.push(res.status);
    }
    expect(statuses).toContain(429);
  });
});
