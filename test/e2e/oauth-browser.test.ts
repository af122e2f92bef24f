/**
 * The sign-in, consent and account pages as a person uses them: Chromium (Debian's
 * /usr/bin/chromium, driven by playwright-core) against `wrangler dev`, landing on a real
 * loopback callback.
 */
import { createHash, randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, launchChromium, startDevServer } from "./server";

const PORT = Number(process.env.E2E_PORT ?? 8791);
const PASSWORD = "correct horse battery";

let dev: DevServer;
let browser: Browser;
let callbackServer: Server;
let callback: string;
let account: { email: string; token: string };

const b64url = (b: Buffer) => b.toString("base64url");
function pkce() {
  const verifier = b64url(randomBytes(32));
  return { verifier, challenge: b64url(createHash("sha256").update(verifier).digest()) };
}

async function api(
  path: string,
  init: {
    method?: string;
    token?: string;
    json?: unknown;
    form?: Record<string, string>;
    headers?: Record<string, string>;
  } = {},
) {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token) headers.Authorization = `Bearer ${init.token}`;
  let body: string | undefined;
  if (init.json !== undefined) {
    headers["Content-Type"] = "application/json";
    body = JSON.stringify(init.json);
  }
  if (init.form) {
    headers["Content-Type"] = "application/x-www-form-urlencoded";
    body = new URLSearchParams(init.form).toString();
  }
  return fetch(`${dev.origin}${path}`, {
    method: init.method ?? (body ? "POST" : "GET"),
    headers,
    body,
    redirect: "manual",
  });
}

function authorizeUrl(clientId: string, redirectUri: string, challenge: string, state: string, scope: string) {
  const q = new URLSearchParams({
    client_id: clientId,
    redirect_uri: redirectUri,
    response_type: "code",
    code_challenge: challenge,
    code_challenge_method: "S256",
    state,
    scope,
  });
  return `${dev.origin}/v1/oauth/authorize?${q}`;
}

async function signInOnPage(page: Page) {
  await page.waitForURL(/\/v1\/signin\?return_to=/);
  await page.getByLabel("Email").fill(account.email);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
}

beforeAll(async () => {
  callbackServer = createServer((_req, res) => {
    res.writeHead(200, { "Content-Type": "text/html" });
    res.end("<!doctype html><title>Callback</title><p>Received.</p>");
  });
  await new Promise<void>((resolve) => callbackServer.listen(0, "127.0.0.1", resolve));
  callback = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}/callback`;

  dev = await startDevServer(PORT);
  browser = await launchChromium();

  const email = `e2e-${Date.now()}@example.com`;
  const signup = await api("/v1/api/signup", {
    json: { workspace_name: "E2E Workspace", email, password: PASSWORD, name: "Eve Edge" },
  });
  expect(signup.status).toBe(201);
  account = { email, token: ((await signup.json()) as { token: string }).token };
});

afterAll(async () => {
  await browser?.close();
  await dev?.stop();
  await new Promise((resolve) => callbackServer?.close(resolve));
});

describe("OAuth in a real browser", () => {
  it("signs in, shows consent, approves, lands on the redirect with a code that exchanges", async () => {
    const reg = await api("/v1/oauth/register", {
      token: account.token,
      json: {
        redirect_uris: [callback],
        scope: "agents:read conversations:read",
        client_name: "Playwright App",
        token_endpoint_auth_method: "none",
      },
    });
    expect(reg.status).toBe(201);
    const client = (await reg.json()) as { client_id: string };
    const { verifier, challenge } = pkce();
    const state = b64url(randomBytes(12));

    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(authorizeUrl(client.client_id, callback, challenge, state, "agents:read"));
    await signInOnPage(page);

    await page.waitForURL(/\/v1\/oauth\/authorize\?/);
    expect(await page.locator("h1").textContent()).toContain("Playwright App");
    expect(await page.locator("body").textContent()).toContain("127.0.0.1");
    expect(await page.locator("body").textContent()).toContain("See your workspace's agents");
    expect(await page.locator("body").textContent()).not.toContain("Read your conversations");
    await page.getByRole("button", { name: "Allow" }).click();

    await page.waitForURL((url) => url.href.startsWith(callback));
    const landed = new URL(page.url());
    expect(landed.searchParams.get("state")).toBe(state);
    expect(landed.searchParams.get("iss")).toBe(dev.origin);
    const code = landed.searchParams.get("code");
    expect(code).toMatch(/^svc_code_/);
    expect(await page.locator("body").textContent()).toContain("Received.");

    const token = await api("/v1/oauth/token", {
      form: {
        grant_type: "authorization_code",
        code: code!,
        code_verifier: verifier,
        redirect_uri: callback,
        client_id: client.client_id,
      },
    });
    expect(token.status).toBe(200);
    const tokens = (await token.json()) as { access_token: string; scope: string };
    expect(tokens.scope).toBe("agents:read");
    const me = (await (await api("/v1/api/me", { token: tokens.access_token })).json()) as {
      auth: string;
      user: { email: string };
    };
    expect(me).toMatchObject({ auth: "oauth", user: { email: account.email } });

    // Consent is remembered: the same request goes straight back with a new code.
    const again = pkce();
    await page.goto(authorizeUrl(client.client_id, callback, again.challenge, "second", "agents:read"));
    await page.waitForURL((url) => url.href.startsWith(callback));
    expect(new URL(page.url()).searchParams.get("state")).toBe("second");
    expect(new URL(page.url()).searchParams.get("code")).toMatch(/^svc_code_/);

    // More scopes ask again; denying lands on the redirect with access_denied.
    await page.goto(
      authorizeUrl(client.client_id, callback, again.challenge, "third", "agents:read conversations:read"),
    );
    expect(await page.locator("body").textContent()).toContain("Read your conversations");
    await page.getByRole("button", { name: "Deny" }).click();
    await page.waitForURL((url) => url.href.startsWith(callback));
    const denied = new URL(page.url());
    expect(denied.searchParams.get("error")).toBe("access_denied");
    expect(denied.searchParams.get("state")).toBe("third");
    expect(denied.searchParams.get("code")).toBeNull();
    await context.close();
  });

  it("sends a first-party client straight from sign-in to its loopback redirect", async () => {
    const { verifier, challenge } = pkce();
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(authorizeUrl("svc_client_cli", callback, challenge, "cli-state", "agents:read"));
    await signInOnPage(page);
    await page.waitForURL((url) => url.href.startsWith(callback));
    const landed = new URL(page.url());
    expect(landed.searchParams.get("state")).toBe("cli-state");
    const token = await api("/v1/oauth/token", {
      form: {
        grant_type: "authorization_code",
        code: landed.searchParams.get("code")!,
        code_verifier: verifier,
        redirect_uri: callback,
        client_id: "svc_client_cli",
      },
    });
    expect(token.status).toBe(200);
    await context.close();
  });

  it("shows a readable error page where it stands, not a redirect, for a request it will not act on", async () => {
    const { challenge } = pkce();
    const context = await browser.newContext();
    const page = await context.newPage();
    const plain = authorizeUrl("svc_client_cli", callback, challenge, "bad", "agents:read").replace(
      "code_challenge_method=S256",
      "code_challenge_method=plain",
    );
    const res = await page.goto(plain);
    expect(res?.status()).toBe(400);
    expect(new URL(page.url()).pathname).toBe("/v1/oauth/authorize");
    expect(await page.locator("h1").textContent()).toContain("cannot be used");
    expect(await page.locator("body").textContent()).toContain("invalid_request");
    await context.close();
  });

  it("refuses to be framed", async () => {
    // The error page a browser gets (a program gets the OAuth error JSON).
    const res = await api(`/v1/oauth/authorize?client_id=svc_client_cli`, { headers: { Accept: "text/html" } });
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
  });
});

describe("The signed-in account page in a real browser", () => {
  it("signs in, shows who you are, creates a token shown once, and signs out", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${dev.origin}/v1/account`);
    await signInOnPage(page);

    await page.waitForURL(`${dev.origin}/v1/account`);
    const body = await page.locator("body").textContent();
    expect(body).toContain(account.email);
    expect(body).toContain("Eve Edge");
    expect(body).toContain("E2E Workspace");
    expect(await page.getByRole("link", { name: "API reference" }).getAttribute("href")).toBe("/v1/docs");

    await page.getByLabel("Name", { exact: true }).fill("Playwright token");
    await page.getByLabel("agents:read", { exact: true }).check();
    await page.getByRole("button", { name: "Create token" }).click();
    await page.waitForURL(`${dev.origin}/v1/account/tokens`);
    const token = (await page.locator("#token").textContent())?.trim() ?? "";
    expect(token).toMatch(/^svc_pat_[A-Za-z0-9_-]{43}$/);
    const me = await api("/v1/api/me", { token });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ auth: "pat", scopes: ["agents:read"], user: { email: account.email } });

    await page.getByRole("button", { name: "Sign out" }).click();
    await page.waitForURL(/\/v1\/signin$/);
    await page.goto(`${dev.origin}/v1/account`);
    await page.waitForURL(/\/v1\/signin\?return_to=%2Fv1%2Faccount$/);
    await context.close();
  });
});
