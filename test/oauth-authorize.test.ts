import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type AuthorizeRequest, consentCsrfToken } from "../src/oauth/authorize";
import { hashToken } from "../src/platform/crypto";
import { call } from "./support/api";
import {
  auditEvents,
  authorizePath,
  csrfFrom,
  exchange,
  expectOAuthError,
  me,
  newPkce,
  obtainCode,
  postConsent,
  REDIRECT,
  registerClient,
  sessionCookie,
  signIn,
  tokensFor,
} from "./support/oauth";
import { addUser, PASSWORD, signupWorkspace } from "./support/seed";

const ISS = "https://svc.test";

async function setup(metadata: Record<string, unknown> = {}) {
  const ws = await signupWorkspace();
  const client = await registerClient(ws.adminToken, {
    scope: "agents:read conversations:read memory:read",
    ...metadata,
  });
  const session = await signIn(ws.email);
  return { ws, client, session };
}

function params(client: { client_id: string }, extra: Record<string, string | undefined> = {}) {
  return {
    client_id: client.client_id,
    redirect_uri: REDIRECT,
    response_type: "code",
    code_challenge: newPkce().challenge,
    code_challenge_method: "S256",
    state: "xyz-123",
    ...extra,
  };
}

/** What a browser's navigation sends. */
const BROWSER = { Accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" };

const authorize = (
  session: string | undefined,
  p: Record<string, string | undefined>,
  headers: Record<string, string> = BROWSER,
) => call("GET", authorizePath(p), { headers: { ...headers, ...(session ? sessionCookie(session) : {}) } });

/** A program (no Accept, or one that does not prefer HTML) asking. */
const authorizeAsProgram = (session: string | undefined, p: Record<string, string | undefined>, accept?: string) =>
  authorize(session, p, accept ? { Accept: accept } : {});

/** The browser's answer to a request that cannot be used: a 400 page naming the OAuth error, no redirect. */
async function expectErrorPage(res: Response, error?: string) {
  expect(res.status).toBe(400);
  expect(res.headers.get("Location")).toBeNull();
  expect(res.headers.get("Content-Type")).toContain("text/html");
  expect(res.headers.get("X-Frame-Options")).toBe("DENY");
  const html = await res.text();
  if (error) expect(html).toContain(`<code>${error}</code>`);
  return html;
}

/** A program's answer: 400 with the OAuth error JSON, no redirect. */
async function expectErrorJson(res: Response, error: string) {
  expect(res.headers.get("Location")).toBeNull();
  const body = await expectOAuthError(res, 400, error);
  expect(body.error_description).toBeTruthy();
  expect(res.headers.get("Cache-Control")).toBe("no-store");
  return body;
}

const codesOf = async (userId: string) =>
  (await env.DB.prepare("SELECT COUNT(*) AS n FROM oauth_codes WHERE user_id = ?").bind(userId).first<{ n: number }>())
    ?.n;

describe("authorize: sign-in", () => {
  it("sends a signed-out browser to sign-in and back to the same authorize URL", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken);
    const path = authorizePath(params(client));
    const res = await call("GET", path);
    expect(res.status).toBe(302);
    const signin = new URL(res.headers.get("Location")!, "https://svc.test");
    expect(signin.pathname).toBe("/v1/signin");
    expect(signin.searchParams.get("return_to")).toBe(path);

    // The sign-in page carries return_to through its form and 303s back to it.
    const page = await call("GET", signin.pathname + signin.search);
    const html = await page.text();
    const csrf = /svc_csrf=([^;]+)/.exec(page.headers.getSetCookie().join("\n"))![1]!;
    expect(html).toContain(`value="${path.replaceAll("&", "&amp;")}"`);
    const post = await call("POST", "/v1/signin", {
      rawBody: new URLSearchParams({
        email: ws.email,
        password: PASSWORD,
        csrf_token: csrf,
        return_to: path,
      }).toString(),
      headers: { "Content-Type": "application/x-www-form-urlencoded", Cookie: `svc_csrf=${csrf}` },
    });
    expect(post.status).toBe(303);
    expect(post.headers.get("Location")).toBe(path);
    const session = /svc_session=([^;]+)/.exec(post.headers.getSetCookie().join("\n"))![1]!;
    const back = await call("GET", path, { headers: sessionCookie(session) });
    expect(back.status).toBe(200);
    expect(await back.text()).toContain("Test App");
  });

  it("treats an expired or revoked session as signed out", async () => {
    const { client, session } = await setup();
    await env.DB.prepare("UPDATE sessions SET revoked_at = ? WHERE token_hash = ?")
      .bind(new Date().toISOString(), hashToken(session))
      .run();
    const res = await authorize(session, params(client));
    expect(res.status).toBe(302);
    expect(res.headers.get("Location")).toMatch(/^\/v1\/signin\?return_to=/);
  });
});

describe("authorize: errors that must not redirect", () => {
  it("shows a 400 page for a missing, unknown or duplicated client_id", async () => {
    const { client, session } = await setup();
    await expectErrorPage(await authorize(session, params(client, { client_id: undefined })), "invalid_request");
    expect(
      await expectErrorPage(
        await authorize(session, params(client, { client_id: "svc_client_nope" })),
        "invalid_client",
      ),
    ).toContain("unknown");
    const dup = `${authorizePath(params(client))}&client_id=${client.client_id}`;
    await expectErrorPage(await call("GET", dup, { headers: { ...BROWSER, ...sessionCookie(session) } }));
  });

  it("answers a program the OAuth error JSON instead of the page, for an unknown client or a bad redirect_uri alike", async () => {
    const { client, session } = await setup();
    const unknown = await expectErrorJson(
      await authorizeAsProgram(session, params(client, { client_id: "svc_client_nope" })),
      "invalid_client",
    );
    expect(unknown.error_description).toContain("unknown");
    await expectErrorJson(
      await authorizeAsProgram(
        session,
        params(client, { redirect_uri: "https://evil.example/cb" }),
        "application/json",
      ),
      "invalid_request",
    );
    // `*/*` prefers nothing: a program.
    await expectErrorJson(
      await authorizeAsProgram(undefined, params(client, { redirect_uri: "https://evil.example/cb" }), "*/*"),
      "invalid_request",
    );
  });

  it("shows a 400 page for a deleted client", async () => {
    const { client, session } = await setup();
    expect(
      (await call("DELETE", `/v1/oauth/register/${client.client_id}`, { token: client.registration_access_token }))
        .status,
    ).toBe(204);
    await expectErrorPage(await authorize(session, params(client)), "invalid_client");
  });

  for (const [name, uri] of [
    ["missing", undefined],
    ["not registered", "https://evil.example/callback"],
    ["a registered prefix", "https://app.example/callback/more"],
    ["with an extra query", "https://app.example/callback?x=1"],
    ["differently cased", "https://APP.example/callback"],
    ["with a fragment", "https://app.example/callback#frag"],
    ["http instead of https", "http://app.example/callback"],
    ["on another port", "https://app.example:8443/callback"],
  ] as const) {
    it(`shows a 400 page for a redirect_uri that is ${name}`, async () => {
      const { client, session } = await setup();
      await expectErrorPage(await authorize(session, params(client, { redirect_uri: uri })), "invalid_request");
    });
  }

  it("checks client and redirect before anything else, signed in or not", async () => {
    const { client } = await setup();
    const html = await expectErrorPage(
      await authorize(
        undefined,
        params(client, { redirect_uri: "https://evil.example/cb", code_challenge: undefined }),
      ),
      "invalid_request",
    );
    expect(html).toContain("The redirect_uri is not registered");
  });
});

// The spec's error table: "`invalid_request` | authorize (400), token (400) | Missing or malformed
// parameters." and "`invalid_scope` | authorize (400) | Only scopes the client may not use were
// requested."; only "`access_denied` | authorize redirect" goes back to the client.
describe("authorize: a request that cannot be used is answered 400 where it stands, never redirected", () => {
  const cases: [string, Record<string, string | undefined>, string][] = [
    ["no code_challenge (`code_challenge` (required))", { code_challenge: undefined }, "invalid_request"],
    [
      "a 31-character code_challenge (`code_challenge` shorter than 32 characters is rejected)",
      { code_challenge: "a".repeat(31) },
      "invalid_request",
    ],
    ["a 129-character code_challenge", { code_challenge: "a".repeat(129) }, "invalid_request"],
    ["a code_challenge outside base64url", { code_challenge: "a".repeat(42) + "=" }, "invalid_request"],
    [
      "code_challenge_method plain (`code_challenge_method=plain` is rejected)",
      { code_challenge_method: "plain" },
      "invalid_request",
    ],
    ["code_challenge_method s256 (wrong case)", { code_challenge_method: "s256" }, "invalid_request"],
    ["response_type token", { response_type: "token" }, "unsupported_response_type"],
    [
      "only scopes the client may not use (Requesting only scopes the client is not allowed returns `invalid_scope`)",
      { scope: "admin billing:read" },
      "invalid_scope",
    ],
    ["only unknown scopes", { scope: "root" }, "invalid_scope"],
    ["an unknown resource", { resource: "https://elsewhere.example/mcp" }, "invalid_target"],
  ];
  for (const [name, extra, error] of cases) {
    it(`${name}: ${error} as a page for a browser, as JSON for a program, and no code`, async () => {
      const { client, session, ws } = await setup();
      await expectErrorPage(await authorize(session, params(client, extra)), error);
      await expectErrorJson(await authorizeAsProgram(session, params(client, extra)), error);
      expect(await codesOf(ws.user.id)).toBe(0);
    });
  }

  it("accepts a 32-character code_challenge (PKCE challenge: at least 32 characters)", async () => {
    const { client, session } = await setup();
    const res = await authorize(session, params(client, { code_challenge: "a".repeat(32) }));
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('value="approve"');
  });

  it("answers a repeated parameter with invalid_request", async () => {
    const { client, session } = await setup();
    const res = await call("GET", `${authorizePath(params(client))}&scope=agents:read&scope=memory:read`, {
      headers: sessionCookie(session),
    });
    await expectErrorJson(res, "invalid_request");
  });

  it("judges the request before sign-in: a signed-out browser sees the error, not the sign-in page", async () => {
    const { client } = await setup();
    await expectErrorPage(
      await authorize(undefined, params(client, { code_challenge_method: "plain" })),
      "invalid_request",
    );
  });

  it("survives malformed percent-encoding", async () => {
    const { client, session } = await setup();
    const bad = await call("GET", "/v1/oauth/authorize?client_id=%ZZ&redirect_uri=%E0%A4%A", {
      headers: { ...BROWSER, ...sessionCookie(session) },
    });
    await expectErrorPage(bad);
    const res = await call("GET", `${authorizePath(params(client, { state: undefined }))}&state=%E0%A4%A&scope=%ZZ`, {
      headers: sessionCookie(session),
    });
    await expectErrorJson(res, "invalid_scope");
  });

  it("keeps the redirect URI's own query and omits state when the request had none", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken, { redirect_uris: ["https://app.example/cb?tenant=a"] });
    const session = await signIn(ws.email);
    const page = await authorize(
      session,
      params(client, { redirect_uri: "https://app.example/cb?tenant=a", state: undefined }),
    );
    const res = await postConsent(session, await page.text(), "approve");
    const location = new URL(res.headers.get("Location")!);
    expect(location.searchParams.get("tenant")).toBe("a");
    expect(location.searchParams.has("state")).toBe(false);
    expect(location.searchParams.get("code")).toMatch(/^svc_code_/);
  });

  it("accepts an absent code_challenge_method and response_type (S256 and code by default)", async () => {
    const { client, session } = await setup();
    const res = await authorize(
      session,
      params(client, { code_challenge_method: undefined, response_type: undefined }),
    );
    expect(res.status).toBe(200);
  });
});

describe("authorize: consent", () => {
  it("shows a framing-proof consent page naming the client, the redirect host and the scopes in words", async () => {
    const { client, session, ws } = await setup();
    const res = await authorize(session, params(client, { scope: "agents:read memory:read" }));
    expect(res.status).toBe(200);
    expect(res.headers.get("X-Frame-Options")).toBe("DENY");
    const csp = res.headers.get("Content-Security-Policy")!;
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("form-action 'self' https://app.example");
    expect(res.headers.get("Referrer-Policy")).toBe("same-origin");
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    const html = await res.text();
    expect(html).toContain("Test App");
    expect(html).toContain("app.example");
    expect(html).toContain(ws.email);
    expect(html).toContain("See your workspace&#39;s agents");
    expect(html).toContain("See what agents remember about you");
    expect(html).not.toContain("Read your conversations");
    expect(html).toContain('value="approve"');
    expect(html).toContain('value="deny"');
    expect(csrfFrom(html)).toMatch(/^\d+\.[A-Za-z0-9_-]{43}$/);
  });

  it("escapes a hostile client name", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken, { client_name: '<script>alert("x")</script>' });
    const session = await signIn(ws.email);
    const html = await (await authorize(session, params(client))).text();
    expect(html).not.toContain("<script>");
    expect(html).toContain("&lt;script&gt;");
  });

  it("approves with a 303 carrying code, state and iss, and audits the grant", async () => {
    const { client, session, ws } = await setup();
    const p = params(client, { scope: "memory:read agents:read admin" });
    const page = await authorize(session, p);
    const res = await postConsent(session, await page.text(), "approve");
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get("Location")!);
    expect(location.origin + location.pathname).toBe(REDIRECT);
    expect(location.searchParams.get("code")).toMatch(/^svc_code_[A-Za-z0-9_-]{43}$/);
    expect(location.searchParams.get("state")).toBe("xyz-123");
    expect(location.searchParams.get("iss")).toBe(ISS);

    const code = await env.DB.prepare("SELECT * FROM oauth_codes WHERE code_hash = ?")
      .bind(hashToken(location.searchParams.get("code")!))
      .first<Record<string, string>>();
    expect(code).toMatchObject({
      client_id: client.client_id,
      user_id: ws.user.id,
      workspace_id: ws.workspace.id,
      redirect_uri: REDIRECT,
      code_challenge: p.code_challenge,
      consumed_at: null,
    });
    // Requested ∩ allowed, in the client's order.
    expect(JSON.parse(code!.scopes!)).toEqual(["agents:read", "memory:read"]);
    expect(Date.parse(code!.expires_at!) - Date.parse(code!.created_at!)).toBe(600_000);

    const consent = await env.DB.prepare("SELECT scopes FROM oauth_consents WHERE user_id = ? AND client_id = ?")
      .bind(ws.user.id, client.client_id)
      .first<{ scopes: string }>();
    expect(JSON.parse(consent!.scopes)).toEqual(["agents:read", "memory:read"]);
    const [event] = await auditEvents(ws.workspace.id, "oauth.consent.grant");
    expect(event).toMatchObject({
      actor_kind: "user",
      actor_id: ws.user.id,
      target: `oauth_client:${client.client_id}`,
      outcome: "success",
    });
    expect(event!.details).toEqual({
      client_id: client.client_id,
      client_name: "Test App",
      scopes: ["agents:read", "memory:read"],
    });
  });

  it("remembers consent and asks again only when the requested scopes grow", async () => {
    const { client, session } = await setup();
    const first = await authorize(session, params(client, { scope: "agents:read" }));
    expect((await postConsent(session, await first.text(), "approve")).status).toBe(303);

    const again = await authorize(session, params(client, { scope: "agents:read" }));
    expect(again.status).toBe(302);
    const location = new URL(again.headers.get("Location")!);
    expect(location.searchParams.get("code")).toBeTruthy();
    expect(location.searchParams.get("state")).toBe("xyz-123");
    expect(location.searchParams.get("iss")).toBe(ISS);

    const grown = await authorize(session, params(client, { scope: "agents:read memory:read" }));
    expect(grown.status).toBe(200);
    expect((await postConsent(session, await grown.text(), "approve")).status).toBe(303);
    // The union is remembered: both the small and the grown request pass without asking.
    expect((await authorize(session, params(client, { scope: "memory:read" }))).status).toBe(302);
    expect((await authorize(session, params(client, { scope: "agents:read memory:read" }))).status).toBe(302);
    // An empty scope means every allowed scope, which is more than approved so far.
    expect((await authorize(session, params(client, { scope: undefined }))).status).toBe(200);
  });

  it("asks each user separately", async () => {
    const { client, session, ws } = await setup();
    const page = await authorize(session, params(client));
    await postConsent(session, await page.text(), "approve");
    const other = await addUser(ws.adminToken, "member", ["agents:read"]);
    const otherSession = await signIn(other.email);
    expect((await authorize(otherSession, params(client))).status).toBe(200);
  });

  it("lets users of another workspace authorize a registered client, with their own consent", async () => {
    const { client } = await setup();
    const other = await signupWorkspace();
    const session = await signIn(other.email);
    const { verifier, challenge } = newPkce();
    const { code } = await obtainCode(session, client, { challenge });
    const tokens = (await (await exchange(client, code, verifier)).json()) as { access_token: string };
    const identity = (await (await me(tokens.access_token)).json()) as { workspace: { id: string } };
    expect(identity.workspace.id).toBe(other.workspace.id);
  });

  it("redirects a denial with access_denied and state (`access_denied` | authorize redirect), records no consent, and audits it", async () => {
    const { client, session, ws } = await setup();
    const page = await authorize(session, params(client));
    const res = await postConsent(session, await page.text(), "deny");
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get("Location")!);
    expect(location.searchParams.get("error")).toBe("access_denied");
    expect(location.searchParams.get("state")).toBe("xyz-123");
    expect(location.searchParams.get("iss")).toBe(ISS);
    expect(location.searchParams.get("code")).toBeNull();
    const consent = await env.DB.prepare("SELECT COUNT(*) AS n FROM oauth_consents WHERE user_id = ?")
      .bind(ws.user.id)
      .first<{ n: number }>();
    expect(consent?.n).toBe(0);
    const [event] = await auditEvents(ws.workspace.id, "oauth.consent.deny");
    expect(event).toMatchObject({ outcome: "denied", target: `oauth_client:${client.client_id}` });
  });

  it("refuses a consent post without a CSRF token, with another session's token, or for altered parameters", async () => {
    const { client, session, ws } = await setup();
    const html = await (await authorize(session, params(client, { scope: "agents:read" }))).text();
    const missing = await postConsent(session, html, "approve", { csrf_token: "" });
    expect(missing.status).toBe(403);
    expect(missing.headers.get("Location")).toBeNull();

    // A second session of the same user cannot replay the first session's form.
    const otherSession = await signIn(ws.email);
    expect((await postConsent(otherSession, html, "approve")).status).toBe(403);

    // The token is bound to the request: widening the scope or swapping the challenge breaks it.
    expect((await postConsent(session, html, "approve", { scope: "agents:read memory:read" })).status).toBe(403);
    expect((await postConsent(session, html, "approve", { code_challenge: newPkce().challenge })).status).toBe(403);
    expect((await postConsent(session, html, "approve", { state: "other" })).status).toBe(403);

    const consents = await env.DB.prepare("SELECT COUNT(*) AS n FROM oauth_consents WHERE user_id = ?")
      .bind(ws.user.id)
      .first<{ n: number }>();
    expect(consents?.n).toBe(0);
    expect((await postConsent(session, html, "approve")).status).toBe(303);
  });

  it("refuses a consent form older than 30 minutes", async () => {
    const { client, session } = await setup();
    const html = await (await authorize(session, params(client))).text();
    const fields = Object.fromEntries([...html.matchAll(/name="([^"]+)" value="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
    const request = {
      client: { clientId: client.client_id },
      redirectUri: REDIRECT,
      codeChallenge: fields.code_challenge!,
      scopes: ["agents:read", "conversations:read", "memory:read"],
      state: "xyz-123",
    } as unknown as AuthorizeRequest;
    const stale = consentCsrfToken(session, request, Date.now() - 31 * 60_000);
    expect((await postConsent(session, html, "approve", { csrf_token: stale })).status).toBe(403);
    const fresh = consentCsrfToken(session, request, Date.now() - 29 * 60_000);
    expect((await postConsent(session, html, "approve", { csrf_token: fresh })).status).toBe(303);
  });

  it("sends a signed-out consent post back through authorize, and re-validates the form's parameters", async () => {
    const { client, session } = await setup();
    const html = await (await authorize(session, params(client))).text();
    const signedOut = await call("POST", "/v1/oauth/consent", {
      rawBody: new URLSearchParams({ ...params(client), csrf_token: csrfFrom(html)!, decision: "approve" }).toString(),
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    expect(signedOut.status).toBe(303);
    expect(signedOut.headers.get("Location")).toMatch(/^\/v1\/oauth\/authorize\?client_id=/);

    const forged = await postConsent(session, html, "approve", { redirect_uri: "https://evil.example/cb" });
    expect(forged.status).toBe(400);
    expect(forged.headers.get("Location")).toBeNull();
    expect((await postConsent(session, html, "maybe" as "approve")).status).toBe(400);
  });

  it("marks scopes beyond the user's role, and the role still caps the token", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken, { scope: "admin agents:read" });
    const member = await addUser(ws.adminToken, "member", ["agents:read"]);
    const session = await signIn(member.email);
    const html = await (await authorize(session, params(client))).text();
    expect(html).toMatch(/Act as a workspace admin for you.*not available to your role, so the app will not get it/s);
    const tokens = await tokensFor(session, client);
    expect(tokens.scope).toBe("agents:read");
    const identity = (await (await me(tokens.access_token)).json()) as { scopes: string[]; auth: string };
    expect(identity).toMatchObject({ scopes: ["agents:read"], auth: "oauth" });
  });
});

describe("authorize: after our own sign-in form", () => {
  it("moves on to the client from a fresh document, because the sign-in form's form-action covers its redirects", async () => {
    const ws = await signupWorkspace();
    const session = await signIn(ws.email);
    const p = params({ client_id: "svc_client_cli" }, { redirect_uri: "http://127.0.0.1:7777/callback" });
    const sameOrigin = {
      ...sessionCookie(session),
      "Sec-Fetch-Site": "same-origin",
      "Sec-Fetch-Mode": "navigate",
      "Sec-Fetch-Dest": "document",
    };
    const res = await call("GET", authorizePath(p), { headers: sameOrigin });
    expect(res.status).toBe(200);
    expect(res.headers.get("Referrer-Policy")).toBe("same-origin");
    expect(res.headers.get("Cache-Control")).toBe("no-store");
    const html = await res.text();
    const target = /<meta http-equiv="refresh" content="0;url=([^"]+)"/.exec(html)?.[1]?.replaceAll("&amp;", "&");
    const location = new URL(target!);
    expect(location.origin + location.pathname).toBe("http://127.0.0.1:7777/callback");
    expect(location.searchParams.get("code")).toMatch(/^svc_code_/);
    expect(location.searchParams.get("state")).toBe("xyz-123");

    // A navigation from the client's site still gets the plain 302.
    const crossSite = await call("GET", authorizePath(p), {
      headers: { ...sameOrigin, "Sec-Fetch-Site": "cross-site" },
    });
    expect(crossSite.status).toBe(302);
  });
});

describe("authorize: first-party CLI client", () => {
  it("skips consent and accepts loopback redirects on any port", async () => {
    const ws = await signupWorkspace();
    const session = await signIn(ws.email);
    for (const redirect of [
      "http://127.0.0.1:53682/callback",
      "http://localhost:9/callback",
      "http://127.0.0.1/callback",
    ]) {
      const res = await authorize(session, params({ client_id: "svc_client_cli" }, { redirect_uri: redirect }));
      expect(res.status).toBe(302);
      const location = new URL(res.headers.get("Location")!);
      expect(location.origin + location.pathname).toBe(new URL(redirect).origin + "/callback");
      expect(location.searchParams.get("code")).toBeTruthy();
    }
    const consents = await env.DB.prepare("SELECT COUNT(*) AS n FROM oauth_consents WHERE user_id = ?")
      .bind(ws.user.id)
      .first<{ n: number }>();
    expect(consents?.n).toBe(0);
  });

  it("grants every CLI scope but svc:computer when none is requested, and refuses other redirects", async () => {
    const ws = await signupWorkspace();
    const session = await signIn(ws.email);
    const { verifier, challenge } = newPkce();
    const redirectUri = "http://127.0.0.1:41234/callback";
    const { code } = await obtainCode(session, { client_id: "svc_client_cli" }, { challenge, redirectUri });
    const tokens = (await (await exchange({ client_id: "svc_client_cli" }, code, verifier, redirectUri)).json()) as {
      scope: string;
    };
    expect(tokens.scope.split(" ")).toContain("admin");
    expect(tokens.scope.split(" ")).not.toContain("svc:computer");
    for (const bad of [
      "http://127.0.0.1:41234/other",
      "https://127.0.0.1/callback",
      "http://127.0.0.2/callback",
      "http://127.0.0.1:41234/callback?x=1",
    ]) {
      await expectErrorPage(
        await authorize(session, params({ client_id: "svc_client_cli" }, { redirect_uri: bad })),
        "invalid_request",
      );
    }
    await expectErrorJson(
      await authorizeAsProgram(
        session,
        params({ client_id: "svc_client_cli" }, { redirect_uri: redirectUri, scope: "svc:computer" }),
      ),
      "invalid_scope",
    );
  });

  it("matches a third-party client's loopback redirect on any port too (RFC 8252)", async () => {
    const ws = await signupWorkspace();
    const client = await registerClient(ws.adminToken, { redirect_uris: ["http://127.0.0.1/cb"] });
    const session = await signIn(ws.email);
    expect((await authorize(session, params(client, { redirect_uri: "http://127.0.0.1:5555/cb" }))).status).toBe(200);
    await expectErrorPage(await authorize(session, params(client, { redirect_uri: "http://localhost:5555/cb" })));
  });
});
