import * as oauth from "oauth4webapi";
import { expect } from "vitest";
import { type ClientInfo, ClientInfoSchema, TokenResponseSchema } from "../../src/oauth/schemas";
import { pkceChallenge } from "../../src/oauth/token-pairs";
import { base64url } from "../../src/platform/ids";
import { call, ORIGIN, parse } from "./api";
import { PASSWORD } from "./seed";

export const REDIRECT = "https://app.example/callback";

/** Signs in through the sign-in form; returns the `svc_session` cookie value. */
export async function signIn(email: string, password = PASSWORD): Promise<string> {
  const page = await call("GET", "/v1/signin");
  const csrfCookie = /svc_csrf=([^;]+)/.exec(page.headers.getSetCookie().join("\n"))?.[1];
  if (!csrfCookie) throw new Error("no csrf cookie");
  const body = new URLSearchParams({ email, password, csrf_token: csrfCookie, return_to: "/v1/api/me" });
  const res = await call("POST", "/v1/signin", {
    rawBody: body.toString(),
    headers: { "Content-Type": "application/x-www-form-urlencoded", Cookie: `svc_csrf=${csrfCookie}` },
  });
  if (res.status !== 303) throw new Error(`sign-in failed: ${res.status} ${await res.text()}`);
  const session = /svc_session=([^;]+)/.exec(res.headers.getSetCookie().join("\n"))?.[1];
  if (!session) throw new Error("no session cookie");
  return session;
}

export const sessionCookie = (session: string) => ({ Cookie: `svc_session=${session}` });

export async function registerClient(token: string, metadata: Record<string, unknown> = {}): Promise<ClientInfo> {
  const res = await call("POST", "/v1/oauth/register", {
    token,
    body: { redirect_uris: [REDIRECT], scope: "agents:read conversations:read", client_name: "Test App", ...metadata },
  });
  if (res.status !== 201) throw new Error(`register failed: ${res.status} ${await res.text()}`);
  return parse(res, ClientInfoSchema);
}

export function newPkce() {
  const verifier = base64url(crypto.getRandomValues(new Uint8Array(32)));
  return { verifier, challenge: pkceChallenge(verifier) };
}

export function authorizePath(params: Record<string, string | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) q.append(k, v);
  return `/v1/oauth/authorize?${q}`;
}

export const csrfFrom = (html: string) => /name="csrf_token" value="([^"]+)"/.exec(html)?.[1];

/** Posts the consent form the way the browser would, with the page's hidden fields. */
export async function postConsent(
  session: string,
  html: string,
  decision: "approve" | "deny",
  override: Record<string, string> = {},
  headers: Record<string, string> = {},
) {
  const form = new URLSearchParams();
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"\/?>/g)) {
    form.append(
      m[1]!,
      m[2]!
        .replaceAll("&amp;", "&")
        .replaceAll("&quot;", '"')
        .replaceAll("&lt;", "<")
        .replaceAll("&gt;", ">")
        .replaceAll("&#39;", "'"),
    );
  }
  for (const [k, v] of Object.entries(override)) form.set(k, v);
  form.set("decision", decision);
  return call("POST", "/v1/oauth/consent", {
    rawBody: form.toString(),
    headers: { "Content-Type": "application/x-www-form-urlencoded", ...sessionCookie(session), ...headers },
  });
}

/**
 * Runs authorize for a signed-in user (approving consent when asked) and returns the code
 * and the redirect it arrived on.
 */
export async function obtainCode(
  session: string,
  client: { client_id: string },
  opts: { redirectUri?: string; scope?: string; state?: string; challenge: string },
): Promise<{ code: string; location: URL }> {
  const path = authorizePath({
    client_id: client.client_id,
    redirect_uri: opts.redirectUri ?? REDIRECT,
    response_type: "code",
    code_challenge: opts.challenge,
    code_challenge_method: "S256",
    scope: opts.scope,
    state: opts.state ?? "st-" + crypto.randomUUID(),
  });
  let res = await call("GET", path, { headers: sessionCookie(session) });
  if (res.status === 200) res = await postConsent(session, await res.text(), "approve");
  expect([302, 303]).toContain(res.status);
  const location = new URL(res.headers.get("Location")!);
  const code = location.searchParams.get("code");
  if (!code) throw new Error(`no code in ${location}`);
  return { code, location };
}

export type TokenCallOpts = { json?: boolean; basic?: [string, string]; headers?: Record<string, string> };

/** A form (default) or JSON POST to one of the token, introspect or revoke endpoints. */
export function oauthPost(path: string, params: Record<string, string | undefined>, opts: TokenCallOpts = {}) {
  const clean: Record<string, string> = {};
  for (const [k, v] of Object.entries(params)) if (v !== undefined) clean[k] = v;
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.basic)
    headers.Authorization = `Basic ${btoa(`${encodeURIComponent(opts.basic[0])}:${encodeURIComponent(opts.basic[1])}`)}`;
  if (opts.json) return call("POST", path, { body: clean, headers });
  headers["Content-Type"] = "application/x-www-form-urlencoded";
  return call("POST", path, { rawBody: new URLSearchParams(clean).toString(), headers });
}

export async function exchange(
  client: { client_id: string; client_secret?: string },
  code: string,
  verifier: string,
  redirectUri = REDIRECT,
) {
  const res = await oauthPost("/v1/oauth/token", {
    grant_type: "authorization_code",
    code,
    code_verifier: verifier,
    redirect_uri: redirectUri,
    client_id: client.client_id,
    client_secret: client.client_secret,
  });
  return res;
}

export async function tokensFor(
  session: string,
  client: { client_id: string; client_secret?: string },
  scope?: string,
) {
  const { verifier, challenge } = newPkce();
  const { code } = await obtainCode(session, client, { challenge, scope });
  const res = await exchange(client, code, verifier);
  if (res.status !== 200) throw new Error(`exchange failed: ${res.status} ${await res.text()}`);
  return parse(res, TokenResponseSchema);
}

export async function expectOAuthError(
  res: Response,
  status: number,
  error: string,
): Promise<{ error: string; error_description?: string }> {
  const text = await res.text();
  if (res.status !== status) throw new Error(`expected ${status} ${error}, got ${res.status}: ${text}`);
  expect(res.headers.get("Content-Type")).toMatch(/^application\/json/);
  const body = JSON.parse(text) as { error: string; error_description?: string };
  expect(body.error, text).toBe(error);
  return body;
}

export const me = (token: string) => call("GET", "/v1/api/me", { token });

export { auditEvents } from "./audit";
export { ORIGIN };

/**
 * An authorization-code request as an oauth4webapi client builds it: PKCE S256, a fresh
 * state, and `scope` / `resource` when given. Answers the URL and what the client keeps.
 */
export async function authorizationUrl(
  as: oauth.AuthorizationServer,
  client: oauth.Client,
  redirectUri: string,
  opts: { scope?: string; resource?: string } = {},
) {
  const codeVerifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL(as.authorization_endpoint!);
  url.searchParams.set("client_id", client.client_id);
  url.searchParams.set("redirect_uri", redirectUri);
  url.searchParams.set("response_type", "code");
  url.searchParams.set("code_challenge", await oauth.calculatePKCECodeChallenge(codeVerifier));
  url.searchParams.set("code_challenge_method", "S256");
  url.searchParams.set("state", state);
  if (opts.scope) url.searchParams.set("scope", opts.scope);
  if (opts.resource) url.searchParams.set("resource", opts.resource);
  return { url, codeVerifier, state };
}
