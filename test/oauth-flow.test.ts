/**
 * Interoperability with a real client library: oauth4webapi drives discovery, registration,
 * PKCE, the code exchange, refresh, introspection and revocation against the Worker.
 */
import { exports } from "cloudflare:workers";
import * as oauth from "oauth4webapi";
import { describe, expect, it } from "vitest";
import { freshIp, ORIGIN } from "./support/api";
import { authorizationUrl, postConsent, sessionCookie, signIn } from "./support/oauth";
import { signupWorkspace } from "./support/seed";

const fetcher = (url: string, init?: RequestInit) => {
  const headers = new Headers(init?.headers);
  headers.set("CF-Connecting-IP", freshIp());
  return exports.default.fetch(new Request(url, { ...init, headers, redirect: "manual" }));
};
const opts = { [oauth.customFetch]: fetcher } as const;
const issuer = new URL(ORIGIN);

async function discover() {
  return oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...opts, algorithm: "oauth2" }));
}

/** What a browser does between the authorization URL and the redirect back. */
async function browser(session: string, authorizationUrl: URL): Promise<URL> {
  let res = await fetcher(authorizationUrl.href, { headers: sessionCookie(session) });
  if (res.status === 200) res = await postConsent(session, await res.text(), "approve");
  expect([302, 303]).toContain(res.status);
  return new URL(res.headers.get("Location")!);
}

describe("metadata", () => {
  it("publishes RFC 8414 authorization server metadata that oauth4webapi accepts", async () => {
    const as = await discover();
    expect(as).toMatchObject({
      issuer: "https://svc.test",
      authorization_endpoint: "https://svc.test/v1/oauth/authorize",
      token_endpoint: "https://svc.test/v1/oauth/token",
      registration_endpoint: "https://svc.test/v1/oauth/register",
      introspection_endpoint: "https://svc.test/v1/oauth/introspect",
      revocation_endpoint: "https://svc.test/v1/oauth/revoke",
      response_types_supported: ["code"],
      grant_types_supported: ["authorization_code", "refresh_token"],
      token_endpoint_auth_methods_supported: ["none", "client_secret_post", "client_secret_basic"],
      introspection_endpoint_auth_methods_supported: ["none", "client_secret_post", "client_secret_basic"],
      revocation_endpoint_auth_methods_supported: ["none", "client_secret_post", "client_secret_basic"],
      code_challenge_methods_supported: ["S256"],
      authorization_response_iss_parameter_supported: true,
    });
    expect(as.scopes_supported).toContain("agents:read");
    expect(as.scopes_supported).not.toContain("svc:computer");
  });

  it("publishes RFC 9728 protected resource metadata, and the API's 401 points to it", async () => {
    const rs = await oauth.processResourceDiscoveryResponse(issuer, await oauth.resourceDiscoveryRequest(issuer, opts));
    expect(rs).toMatchObject({
      resource: "https://svc.test",
      authorization_servers: ["https://svc.test"],
      bearer_methods_supported: ["header"],
    });
    const res = await fetcher(`${ORIGIN}/v1/api/me`);
    expect(res.status).toBe(401);
    expect(res.headers.get("WWW-Authenticate")).toBe(
      'Bearer resource_metadata="https://svc.test/.well-known/oauth-protected-resource"',
    );
  });

  it("documents the OAuth endpoints in the OpenAPI document", async () => {
    const doc = (await (await fetcher(`${ORIGIN}/v1/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { security?: unknown }>>;
      components: { securitySchemes: Record<string, unknown> };
    };
    for (const path of [
      "/v1/oauth/register",
      "/v1/oauth/register/{client_id}",
      "/v1/oauth/authorize",
      "/v1/oauth/token",
      "/v1/oauth/introspect",
      "/v1/oauth/revoke",
      "/.well-known/oauth-authorization-server",
      "/.well-known/oauth-protected-resource",
    ]) {
      expect(doc.paths[path], path).toBeDefined();
    }
    expect(doc.paths["/v1/oauth/register/{client_id}"]?.get?.security).toEqual([{ registration_access_token: [] }]);
    expect(doc.components.securitySchemes.registration_access_token).toBeDefined();
  });
});

const variants = [
  { method: "none", auth: (_: oauth.Client) => oauth.None() },
  { method: "client_secret_post", auth: (c: oauth.Client) => oauth.ClientSecretPost(c.client_secret as string) },
  { method: "client_secret_basic", auth: (c: oauth.Client) => oauth.ClientSecretBasic(c.client_secret as string) },
] as const;

describe("the whole flow with oauth4webapi", () => {
  for (const variant of variants) {
    it(`works for a ${variant.method} client: register, authorize, exchange, call, refresh, introspect, revoke`, async () => {
      const ws = await signupWorkspace();
      const session = await signIn(ws.email);
      const as = await discover();
      const redirectUri = "https://client.example/cb";

      const registration = await oauth.dynamicClientRegistrationRequest(
        as,
        {
          redirect_uris: [redirectUri],
          token_endpoint_auth_method: variant.method,
          grant_types: ["authorization_code", "refresh_token"],
          scope: "agents:read conversations:read",
          client_name: `lib ${variant.method}`,
        },
        { ...opts, initialAccessToken: ws.adminToken },
      );
      const client = (await oauth.processDynamicClientRegistrationResponse(registration)) as oauth.Client;
      expect(client.client_id).toMatch(/^svc_client_/);
      expect(client.client_secret === undefined).toBe(variant.method === "none");
      const clientAuth = variant.auth(client);

      const { url, codeVerifier, state } = await authorizationUrl(as, client, redirectUri, { scope: "agents:read" });
      const callback = await browser(session, url);
      const params = oauth.validateAuthResponse(as, client, callback, state);

      const tokens = await oauth.processAuthorizationCodeResponse(
        as,
        client,
        await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, redirectUri, codeVerifier, opts),
      );
      expect(tokens.token_type).toBe("bearer");
      expect(tokens.expires_in).toBe(3600);
      expect(tokens.scope).toBe("agents:read");
      expect(tokens.refresh_token).toMatch(/^svc_rt_/);

      const meRes = await oauth.protectedResourceRequest(
        tokens.access_token,
        "GET",
        new URL(`${ORIGIN}/v1/api/me`),
        undefined,
        undefined,
        opts,
      );
      expect(meRes.status).toBe(200);
      expect(await meRes.json()).toMatchObject({ auth: "oauth", scopes: ["agents:read"], user: { id: ws.user.id } });

      const refreshed = await oauth.processRefreshTokenResponse(
        as,
        client,
        await oauth.refreshTokenGrantRequest(as, client, clientAuth, tokens.refresh_token!, opts),
      );
      expect(refreshed.scope).toBe("agents:read");
      expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);

      const active = await oauth.processIntrospectionResponse(
        as,
        client,
        await oauth.introspectionRequest(as, client, clientAuth, refreshed.access_token, opts),
      );
      expect(active).toMatchObject({
        active: true,
        client_id: client.client_id,
        username: ws.email,
        sub: ws.user.id,
        scope: "agents:read",
        token_type: "Bearer",
      });

      await oauth.processRevocationResponse(
        await oauth.revocationRequest(as, client, clientAuth, refreshed.refresh_token!, opts),
      );
      const inactive = await oauth.processIntrospectionResponse(
        as,
        client,
        await oauth.introspectionRequest(as, client, clientAuth, refreshed.access_token, opts),
      );
      expect(inactive).toEqual({ active: false });
      const after = await oauth
        .protectedResourceRequest(
          refreshed.access_token,
          "GET",
          new URL(`${ORIGIN}/v1/api/me`),
          undefined,
          undefined,
          opts,
        )
        .catch((e: unknown) => e);
      const status = after instanceof Response ? after.status : (after as oauth.WWWAuthenticateChallengeError).status;
      expect(status).toBe(401);

      // The library sees a replayed code as invalid_grant.
      const replay = await oauth
        .processAuthorizationCodeResponse(
          as,
          client,
          await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, redirectUri, codeVerifier, opts),
        )
        .catch((e: unknown) => e);
      expect(replay).toBeInstanceOf(oauth.ResponseBodyError);
      expect((replay as oauth.ResponseBodyError).error).toBe("invalid_grant");
    });
  }

  it("reports a wrong confidential secret as invalid_client through the library", async () => {
    const ws = await signupWorkspace();
    const as = await discover();
    const client = (await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(
        as,
        {
          redirect_uris: ["https://client.example/cb"],
          token_endpoint_auth_method: "client_secret_post",
          scope: "agents:read",
        },
        { ...opts, initialAccessToken: ws.adminToken },
      ),
    )) as oauth.Client;
    const err = await oauth
      .processIntrospectionResponse(
        as,
        client,
        await oauth.introspectionRequest(as, client, oauth.ClientSecretPost("svc_csec_wrong"), "svc_at_x", opts),
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(oauth.ResponseBodyError);
    expect((err as oauth.ResponseBodyError).error).toBe("invalid_client");
    expect((err as oauth.ResponseBodyError).status).toBe(401);
  });

  it("sees the user's denial as access_denied with the state", async () => {
    const ws = await signupWorkspace();
    const session = await signIn(ws.email);
    const as = await discover();
    const client = (await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(
        as,
        { redirect_uris: ["https://client.example/cb"], scope: "agents:read" },
        { ...opts, initialAccessToken: ws.adminToken },
      ),
    )) as oauth.Client;
    const { url, state } = await authorizationUrl(as, client, "https://client.example/cb");
    const page = await fetcher(url.href, { headers: sessionCookie(session) });
    const denied = await postConsent(session, await page.text(), "deny");
    const err = (() => {
      try {
        oauth.validateAuthResponse(as, client, new URL(denied.headers.get("Location")!), state);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(oauth.AuthorizationResponseError);
    expect((err as oauth.AuthorizationResponseError).error).toBe("access_denied");
  });

  it("serves the first-party CLI client on a loopback port without consent", async () => {
    const ws = await signupWorkspace();
    const session = await signIn(ws.email);
    const as = await discover();
    const client: oauth.Client = { client_id: "svc_client_cli", token_endpoint_auth_method: "none" };
    const redirectUri = "http://127.0.0.1:49152/callback";
    const { url, codeVerifier, state } = await authorizationUrl(as, client, redirectUri, {
      scope: "agents:read conversations:write",
    });
    const first = await fetcher(url.href, { headers: sessionCookie(session) });
    expect(first.status).toBe(302);
    const params = oauth.validateAuthResponse(as, client, new URL(first.headers.get("Location")!), state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, redirectUri, codeVerifier, opts),
    );
    expect(tokens.scope).toBe("agents:read conversations:write");
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, opts),
    );
    expect(refreshed.access_token).toMatch(/^svc_at_/);
  });
});
