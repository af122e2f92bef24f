/**
 * An MCP client with no prior relationship: the MCP SDK's own `auth()` flow, unmodified (its
 * requests carry nothing the test added), against the Worker, with a Client ID Metadata
 * Document that the test serves at an https URL. Discovery → authorize → consent → token →
 * tools/call ask_agent → refresh; then the documents the service must refuse.
 *
 * MSW answers the network: requests to the service go to the Worker (as over the internet),
 * requests for the client's document come from the test. Anything else fails the test.
 */
import { env, exports } from "cloudflare:workers";
import { auth, type OAuthClientProvider, UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import { HttpResponse, http } from "msw";
import { setupServer } from "msw/node";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { DOCUMENT_MAX_BYTES, freshnessSeconds } from "../src/oauth/client-documents";
import { ORIGIN } from "./support/api";
import { auditEvents } from "./support/audit";
import { MCP_RESOURCE, MCP_URL } from "./support/mcp";
import {
  authorizePath,
  expectOAuthError,
  newPkce,
  oauthPost,
  postConsent,
  sessionCookie,
  signIn,
} from "./support/oauth";
import { fakeLlm } from "./support/scripted-llm";
import { signupWorkspace } from "./support/seed";

const CLIENT_HOST = "mcp-client.test";
const DOC_URL = `https://${CLIENT_HOST}/oauth/client.json`;
const REDIRECT = "http://127.0.0.1:33418/callback";
const ALL = "agents:read conversations:read conversations:write";

type Doc = Record<string, unknown>;
const goodDoc = (url: string, extra: Doc = {}): Doc => ({
  client_id: url,
  client_name: "Inspector Test Client",
  client_uri: `https://${CLIENT_HOST}`,
  redirect_uris: [REDIRECT],
  grant_types: ["authorization_code", "refresh_token"],
  response_types: ["code"],
  token_endpoint_auth_method: "none",
  ...extra,
});

/** The documents the test serves, by path, and how often each was fetched. */
const served = new Map<string, { body: string; headers?: Record<string, string>; status?: number }>();
const fetches = new Map<string, number>();
const serve = (path: string, doc: Doc | string, headers: Record<string, string> = {}, status = 200) =>
  served.set(path, { body: typeof doc === "string" ? doc : JSON.stringify(doc), headers, status });

const server = setupServer(
  http.all(`${ORIGIN}/*`, ({ request }) => exports.default.fetch(request as Request)),
  http.get(`https://${CLIENT_HOST}/*`, ({ request }) => {
    const path = new URL(request.url).pathname;
    fetches.set(path, (fetches.get(path) ?? 0) + 1);
    const doc = served.get(path);
    if (!doc) return new HttpResponse("not found", { status: 404 });
    return new HttpResponse(doc.body, {
      status: doc.status ?? 200,
      headers: { "Content-Type": "application/json", ...doc.headers },
    });
  }),
);

beforeAll(() => server.listen({ onUnhandledRequest: "error" }));
afterEach(() => server.resetHandlers());
afterAll(() => server.close());

/** An in-memory OAuthClientProvider, as an MCP client application implements it. */
class MemoryProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = "";
  authorizationUrl: URL | undefined;
  constructor(
    readonly clientMetadataUrl: string,
    readonly redirectTo = REDIRECT,
  ) {}
  get redirectUrl() {
    return this.redirectTo;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "Inspector Test Client",
      redirect_uris: [this.redirectTo],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  state = () => "state-xyz";
  clientInformation = () => this.info;
  saveClientInformation = (info: OAuthClientInformationMixed) => {
    this.info = info;
  };
  tokens = () => this.saved;
  saveTokens = (tokens: OAuthTokens) => {
    this.saved = tokens;
  };
  redirectToAuthorization = (url: URL) => {
    this.authorizationUrl = url;
  };
  saveCodeVerifier = (v: string) => {
    this.verifier = v;
  };
  codeVerifier = () => this.verifier;
}

/** What the user's browser does with the authorization URL: sign-in cookie, consent page, Allow. */
async function browser(session: string, url: URL, decide: "approve" | "deny" = "approve") {
  const page = await exports.default.fetch(new Request(url, { headers: sessionCookie(session), redirect: "manual" }));
  expect(page.status).toBe(200);
  const html = await page.text();
  const res = await postConsent(session, html, decide);
  expect(res.status).toBe(303);
  return { html, location: new URL(res.headers.get("Location")!) };
}

let ws: Awaited<ReturnType<typeof signupWorkspace>>;
let session: string;
let llm: ReturnType<typeof fakeLlm> | null = null;

beforeAll(async () => {
  ws = await signupWorkspace();
  session = await signIn(ws.email);
});
beforeEach(() => {
  served.clear();
  fetches.clear();
});
afterEach(() => {
  llm?.restore();
  llm = null;
});

describe("the MCP SDK's auth() with a Client ID Metadata Document", () => {
  it("discovers, authorizes through consent, exchanges, calls ask_agent and refreshes", async () => {
    serve("/oauth/client.json", goodDoc(DOC_URL), { "Cache-Control": "max-age=300" });
    const provider = new MemoryProvider(DOC_URL);

    // 1. Unauthenticated: the 401 leads the SDK through discovery to an authorization URL.
    const first = new Client({ name: "sdk-client", version: "1.0.0" });
    await expect(
      first.connect(new StreamableHTTPClientTransport(new URL(MCP_URL), { authProvider: provider })),
    ).rejects.toThrow(UnauthorizedError);
    expect(provider.info?.client_id).toBe(DOC_URL);
    const url = provider.authorizationUrl!;
    expect(url.origin + url.pathname).toBe(`${ORIGIN}/v1/oauth/authorize`);
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      client_id: DOC_URL,
      redirect_uri: REDIRECT,
      resource: MCP_RESOURCE,
      scope: ALL,
      code_challenge_method: "S256",
      state: "state-xyz",
    });

    // 2. The user's browser: the consent page names the document's client and its host.
    const { html, location } = await browser(session, url);
    expect(html).toContain("Inspector Test Client");
    expect(html).toContain(CLIENT_HOST);
    expect(html).toContain("runs on your own computer");
    expect(html).not.toContain("svc:computer");
    expect(location.origin + location.pathname).toBe(REDIRECT);
    expect(location.searchParams.get("state")).toBe("state-xyz");
    expect(location.searchParams.get("iss")).toBe(ORIGIN);

    // 3. The code goes back to the SDK, which exchanges it at the token endpoint.
    const transport = new StreamableHTTPClientTransport(new URL(MCP_URL), { authProvider: provider });
    await transport.finishAuth(location.searchParams.get("code")!);
    expect(provider.saved).toMatchObject({ token_type: "Bearer", scope: ALL });
    expect(provider.saved!.access_token).toMatch(/^svc_at_/);

    // 4. Connected: ask_agent through a fast turn.
    llm = fakeLlm({ text: "Hello from the assistant." });
    const client = new Client({ name: "sdk-client", version: "1.0.0" });
    await client.connect(transport);
    const result = await client.callTool({ name: "ask_agent", arguments: { prompt: "Say hello" } });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ reply: "Hello from the assistant.", agent_slug: "assistant" });

    // The token is bound to the MCP server: the rest of the API refuses it.
    const me = await exports.default.fetch(
      new Request(`${ORIGIN}/v1/api/me`, { headers: { Authorization: `Bearer ${provider.saved!.access_token}` } }),
    );
    expect(me.status).toBe(401);

    // 5. Refresh through the SDK: a new pair, the same scopes and resource; the old refresh token is spent.
    const before = provider.saved!;
    expect(await auth(provider, { serverUrl: MCP_URL })).toBe("AUTHORIZED");
    expect(provider.saved!.access_token).not.toBe(before.access_token);
    expect(provider.saved!.refresh_token).not.toBe(before.refresh_token);
    expect(provider.saved!.scope).toBe(ALL);
    const again = new Client({ name: "sdk-client", version: "1.0.0" });
    await again.connect(new StreamableHTTPClientTransport(new URL(MCP_URL), { authProvider: provider }));
    expect((await again.callTool({ name: "list_agents", arguments: {} })).isError).toBeFalsy();
    const reused = await oauthPost("/v1/oauth/token", {
      grant_type: "refresh_token",
      refresh_token: before.refresh_token!,
      client_id: DOC_URL,
    });
    await expectOAuthError(reused, 400, "invalid_grant");

    // Cached by its headers: one fetch served the authorization, the consent, the exchange and the refresh.
    expect(fetches.get("/oauth/client.json")).toBe(1);
    const consent = (await auditEvents(ws.workspace.id, "oauth.consent.grant")).find(
      (e) => e.target === `oauth_client:${DOC_URL}`,
    );
    expect(consent?.details).toMatchObject({ client_id: DOC_URL, client_name: "Inspector Test Client" });
  });

  it("asks for consent every time, and fetches the document again once its copy is stale", async () => {
    const path = "/oauth/again.json";
    const docUrl = `https://${CLIENT_HOST}${path}`;
    serve(path, goodDoc(docUrl, { client_name: "Version One" }), { "Cache-Control": "no-cache" });
    const { challenge } = newPkce();
    const authorize = () =>
      exports.default.fetch(
        new Request(
          `${ORIGIN}${authorizePath({ client_id: docUrl, redirect_uri: REDIRECT, response_type: "code", code_challenge: challenge, scope: "agents:read" })}`,
          { headers: sessionCookie(session), redirect: "manual" },
        ),
      );
    const page = await authorize();
    expect(await page.text()).toContain("Version One");
    await postConsent(session, await (await authorize()).text(), "approve");
    // Approved before, yet asked again: anyone can publish a document under any name.
    serve(path, goodDoc(docUrl, { client_name: "Version Two" }), { "Cache-Control": "max-age=600" });
    const third = await authorize();
    expect(third.status).toBe(200);
    expect(await third.text()).toContain("Version Two");
    const fetchedSoFar = fetches.get(path)!;
    await authorize();
    expect(fetches.get(path)).toBe(fetchedSoFar);
  });

  it("never offers or grants svc:computer, even when the document asks for it", async () => {
    const path = "/oauth/computer.json";
    const docUrl = `https://${CLIENT_HOST}${path}`;
    serve(path, goodDoc(docUrl, { scope: "svc:computer agents:read" }), { "Cache-Control": "max-age=60" });
    const { challenge } = newPkce();
    const authorize = (scope?: string) =>
      exports.default.fetch(
        new Request(
          `${ORIGIN}${authorizePath({ client_id: docUrl, redirect_uri: REDIRECT, response_type: "code", code_challenge: challenge, scope })}`,
          { headers: sessionCookie(session), redirect: "manual" },
        ),
      );
    const page = await (await authorize()).text();
    expect(page).toContain("agents:read");
    expect(page).not.toContain("svc:computer");
    const alone = await authorize("svc:computer");
    expect(alone.status).toBe(400);
    expect(((await alone.json()) as { error: string }).error).toBe("invalid_scope");
    const row = await env.DB.prepare("SELECT scopes FROM oauth_clients WHERE client_id = ?").bind(docUrl).first<{
      scopes: string;
    }>();
    expect(JSON.parse(row!.scopes)).toEqual(["agents:read"]);
  });
});

describe("documents the service refuses", () => {
  /** The authorize page a browser sees for a client_id (no redirect), and the token endpoint's answer for it. */
  async function refusedEverywhere(clientId: string, redirectUri = REDIRECT) {
    const { challenge } = newPkce();
    const page = await exports.default.fetch(
      new Request(
        `${ORIGIN}${authorizePath({ client_id: clientId, redirect_uri: redirectUri, response_type: "code", code_challenge: challenge, state: "s" })}`,
        { headers: { ...sessionCookie(session), Accept: "text/html" }, redirect: "manual" },
      ),
    );
    const html = await page.text();
    expect(page.status, html).toBe(400);
    expect(page.headers.get("Content-Type")).toMatch(/^text\/html/);
    expect(page.headers.get("Location")).toBeNull();
    expect(html).toContain("invalid_request");
    const token = await oauthPost("/v1/oauth/token", {
      grant_type: "authorization_code",
      code: "svc_code_whatever",
      code_verifier: "v".repeat(43),
      redirect_uri: redirectUri,
      client_id: clientId,
    });
    return { html, token: await expectOAuthError(token, 401, "invalid_client") };
  }

  it("a document whose client_id is not its URL", async () => {
    serve("/oauth/liar.json", goodDoc(`https://${CLIENT_HOST}/oauth/client.json`));
    const { html, token } = await refusedEverywhere(`https://${CLIENT_HOST}/oauth/liar.json`);
    expect(html).toContain("client_id is not the URL");
    // The token endpoint never fetches a document no authorization stored: an unknown client.
    const fetched = fetches.get("/oauth/liar.json");
    expect(token.error_description).toBe("Unknown or deleted client");
    expect(fetches.get("/oauth/liar.json")).toBe(fetched);
  });

  it("an anonymous visitor or caller makes the service fetch nothing and store no client", async () => {
    const path = "/oauth/anonymous.json";
    const docUrl = `https://${CLIENT_HOST}${path}`;
    serve(path, goodDoc(docUrl));
    const { challenge } = newPkce();
    const page = await exports.default.fetch(
      new Request(
        `${ORIGIN}${authorizePath({ client_id: docUrl, redirect_uri: REDIRECT, response_type: "code", code_challenge: challenge })}`,
        { redirect: "manual" },
      ),
    );
    expect(page.status).toBe(302);
    expect(page.headers.get("Location")).toMatch(/^\/v1\/signin\?return_to=/);
    const consent = await exports.default.fetch(
      new Request(`${ORIGIN}/v1/oauth/consent`, {
        method: "POST",
        body: new URLSearchParams({ client_id: docUrl, redirect_uri: REDIRECT, response_type: "code" }),
      }),
    );
    expect(consent.status).toBe(400);
    await expectOAuthError(
      await oauthPost("/v1/oauth/token", { grant_type: "refresh_token", refresh_token: "x", client_id: docUrl }),
      401,
      "invalid_client",
    );
    expect(fetches.get(path)).toBeUndefined();
    expect(await env.DB.prepare("SELECT 1 FROM oauth_clients WHERE client_id = ?1").bind(docUrl).first()).toBeNull();
  });

  it("a redirect URI the document does not list (exact match, no loopback port leeway)", async () => {
    const path = "/oauth/strict.json";
    const docUrl = `https://${CLIENT_HOST}${path}`;
    serve(path, goodDoc(docUrl), { "Cache-Control": "max-age=60" });
    for (const redirect of ["http://127.0.0.1:40000/callback", "https://attacker.example/callback"]) {
      const { challenge } = newPkce();
      const page = await exports.default.fetch(
        new Request(
          `${ORIGIN}${authorizePath({ client_id: docUrl, redirect_uri: redirect, response_type: "code", code_challenge: challenge })}`,
          { headers: sessionCookie(session), redirect: "manual" },
        ),
      );
      expect(page.status).toBe(400);
      expect(page.headers.get("Location")).toBeNull();
      expect(await page.text()).toContain("invalid_request");
    }
    // The SDK's own flow with a redirect URL the document does not list ends on the same page.
    const provider = new MemoryProvider(docUrl, "http://127.0.0.1:40000/callback");
    expect(await auth(provider, { serverUrl: MCP_URL })).toBe("REDIRECT");
    const page = await exports.default.fetch(
      new Request(provider.authorizationUrl!, { headers: sessionCookie(session), redirect: "manual" }),
    );
    expect(page.status).toBe(400);
  });

  it("a document at a private or local address, fetched never", async () => {
    for (const clientId of [
      "https://10.0.0.7/oauth/client.json",
      "https://127.0.0.1/client.json",
      "https://[::1]/client.json",
      "https://metadata.internal/client.json",
    ]) {
      const { html } = await refusedEverywhere(clientId);
      expect(html).toContain("may not be fetched");
    }
  });

  it("a document over 64 KiB, whether it says so or not", async () => {
    const big = goodDoc(`https://${CLIENT_HOST}/oauth/big.json`, { padding: "x".repeat(DOCUMENT_MAX_BYTES) });
    serve("/oauth/big.json", big);
    const { html } = await refusedEverywhere(`https://${CLIENT_HOST}/oauth/big.json`);
    expect(html).toContain("larger than 64 KiB");
  });

  it("a confidential client, a missing document, JSON that is not a document, a URL without a path", async () => {
    serve(
      "/oauth/secret.json",
      goodDoc(`https://${CLIENT_HOST}/oauth/secret.json`, { token_endpoint_auth_method: "client_secret_basic" }),
    );
    expect((await refusedEverywhere(`https://${CLIENT_HOST}/oauth/secret.json`)).html).toContain("only public clients");
    expect((await refusedEverywhere(`https://${CLIENT_HOST}/oauth/missing.json`)).html).toContain("HTTP 404");
    serve("/oauth/array.json", "[1, 2]");
    expect((await refusedEverywhere(`https://${CLIENT_HOST}/oauth/array.json`)).html).toContain("not a JSON object");
    serve("/oauth/nameless.json", goodDoc(`https://${CLIENT_HOST}/oauth/nameless.json`, { client_name: undefined }));
    expect((await refusedEverywhere(`https://${CLIENT_HOST}/oauth/nameless.json`)).html).toContain("client_name");
    expect((await refusedEverywhere(`https://${CLIENT_HOST}/`)).html).toContain("must have a path");
    expect((await refusedEverywhere(`https://${CLIENT_HOST}/oauth/../x.json`)).html).toContain("normal form");
  });

  it("an https client_id another client holds, and a document client since disabled: neither row is rewritten", async () => {
    const taken = `https://${CLIENT_HOST}/oauth/taken.json`;
    serve("/oauth/taken.json", goodDoc(taken), { "Cache-Control": "max-age=60" });
    // A row under that id with no document, as a registered or first-party client has.
    const now = new Date().toISOString();
    await env.DB.prepare(
      `INSERT INTO oauth_clients (client_id, name, redirect_uris, scopes, grant_types, response_types, auth_method,
         first_party, issued_at, created_at, updated_at)
       VALUES (?1, 'Platform client', '[]', '["agents:read"]', '["authorization_code"]', '["code"]', 'none', 1, 0, ?2, ?2)`,
    )
      .bind(taken, now)
      .run();
    expect((await refusedEverywhere(taken)).html).toContain("taken by another client");
    const kept = await env.DB.prepare("SELECT name, document_fetched_at FROM oauth_clients WHERE client_id = ?1")
      .bind(taken)
      .first();
    expect(kept).toEqual({ name: "Platform client", document_fetched_at: null });

    const path = "/oauth/disabled.json";
    const disabled = `https://${CLIENT_HOST}${path}`;
    serve(path, goodDoc(disabled, { client_name: "Before" }), { "Cache-Control": "no-cache" });
    const { challenge } = newPkce();
    const page = await exports.default.fetch(
      new Request(
        `${ORIGIN}${authorizePath({ client_id: disabled, redirect_uri: REDIRECT, response_type: "code", code_challenge: challenge })}`,
        { headers: sessionCookie(session), redirect: "manual" },
      ),
    );
    expect(page.status).toBe(200);
    await env.DB.prepare("UPDATE oauth_clients SET disabled_at = ?1 WHERE client_id = ?2").bind(now, disabled).run();
    serve(path, goodDoc(disabled, { client_name: "After" }), { "Cache-Control": "no-cache" });
    expect((await refusedEverywhere(disabled)).html).toContain("has been disabled");
    const row = await env.DB.prepare("SELECT name, disabled_at FROM oauth_clients WHERE client_id = ?1")
      .bind(disabled)
      .first();
    // Fetched again and stored, but still disabled.
    expect(row).toEqual({ name: "After", disabled_at: now });
  });

  it("a document the service used before and that is now gone: refused at the next token request", async () => {
    const path = "/oauth/gone.json";
    const docUrl = `https://${CLIENT_HOST}${path}`;
    serve(path, goodDoc(docUrl), { "Cache-Control": "max-age=60" });
    const provider = new MemoryProvider(docUrl);
    expect(await auth(provider, { serverUrl: MCP_URL })).toBe("REDIRECT");
    const { location } = await browser(session, provider.authorizationUrl!);
    // The copy expires and the document disappears before the code is exchanged.
    await env.DB.prepare("UPDATE oauth_clients SET document_expires_at = ? WHERE client_id = ?")
      .bind(new Date(Date.now() - 1000).toISOString(), docUrl)
      .run();
    served.delete(path);
    await expect(
      auth(provider, { serverUrl: MCP_URL, authorizationCode: location.searchParams.get("code")! }),
    ).rejects.toMatchObject({ errorCode: "invalid_client" });
  });
});

describe("how long a fetched document is used", () => {
  const h = (headers: Record<string, string>) =>
    freshnessSeconds(new Headers(headers), Date.parse("2026-01-01T00:00:00Z"));
  it("follows its caching headers, never beyond 24 hours", () => {
    expect(h({})).toBe(0);
    expect(h({ "Cache-Control": "max-age=300" })).toBe(300);
    expect(h({ "Cache-Control": "public, s-maxage=120, max-age=300" })).toBe(120);
    expect(h({ "Cache-Control": "max-age=300", Age: "100" })).toBe(200);
    expect(h({ "Cache-Control": "max-age=999999" })).toBe(86_400);
    expect(h({ "Cache-Control": "no-store, max-age=300" })).toBe(0);
    expect(h({ "Cache-Control": "no-cache" })).toBe(0);
    expect(h({ Expires: "Thu, 01 Jan 2026 01:00:00 GMT", Date: "Thu, 01 Jan 2026 00:00:00 GMT" })).toBe(3600);
    expect(h({ Expires: "Wed, 31 Dec 2025 00:00:00 GMT" })).toBe(0);
    expect(h({ Expires: "not a date" })).toBe(0);
    expect(h({ "Cache-Control": "max-age=abc" })).toBe(0);
  });
});

describe("authorization server metadata", () => {
  it("says Client ID Metadata Documents are supported", async () => {
    const res = await exports.default.fetch(new Request(`${ORIGIN}/.well-known/oauth-authorization-server`));
    expect(await res.json()).toMatchObject({ client_id_metadata_document_supported: true });
  });
});
