// The peer: the same refresh_token grant through `@cloudflare/workers-oauth-provider`, Cloudflare's
// OAuth 2.1 provider library for Workers, which keeps clients, grants and tokens in KV (bound as
// OAUTH_KV; a refresh reads the client and the grant, unwraps and wraps the grant's key for the
// new tokens, and writes the grant and the new access token back). Bundled by lib/runtime.mjs.
//
//   POST /v1/oauth/token                      the library's token endpoint, as a client calls it
//   POST /seed?client_id=&count=              `count` new grants of the client, each through the
//                                             library's own authorization and code exchange;
//                                             answers their refresh tokens (outside measured time)
//   POST /client                              registers a public client; answers its client_id
import { OAuthProvider } from "@cloudflare/workers-oauth-provider";

const REDIRECT = "https://peer.bench/callback";
const SCOPES = ["agents:read", "profile:read"];
const VERIFIER = "bench-verifier-bench-verifier-bench-verifier-0123456789";

const base64url = (bytes) =>
  btoa(String.fromCharCode(...bytes))
    .replaceAll("+", "-")
    .replaceAll("/", "_")
    .replace(/=+$/, "");
let challenge;
let seeded = 0;

/** One grant of `clientId` through the library's authorization and code exchange; its refresh token. */
async function grant(request, env, ctx, clientId) {
  challenge ??= base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(VERIFIER))));
  const { redirectTo } = await env.OAUTH_PROVIDER.completeAuthorization({
    request: {
      responseType: "code",
      clientId,
      redirectUri: REDIRECT,
      scope: SCOPES,
      state: "bench",
      codeChallenge: challenge,
      codeChallengeMethod: "S256",
    },
    userId: `user${++seeded}`,
    metadata: {},
    scope: SCOPES,
    props: { userId: `user${seeded}` },
    revokeExistingGrants: false,
  });
  const code = new URL(redirectTo).searchParams.get("code");
  const res = await provider.fetch(
    new Request(new URL("/v1/oauth/token", request.url), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "authorization_code",
        code,
        client_id: clientId,
        redirect_uri: REDIRECT,
        code_verifier: VERIFIER,
      }),
    }),
    env,
    ctx,
  );
  const body = await res.json();
  if (!res.ok) throw new Error(`code exchange: ${res.status} ${JSON.stringify(body)}`);
  return body.refresh_token;
}

/** The bench's own routes, the provider's default handler (where it hands over its helpers). */
async function benchRoutes(request, env, ctx) {
  const url = new URL(request.url);
  if (request.method === "POST" && url.pathname === "/client") {
    const client = await env.OAUTH_PROVIDER.createClient({
      redirectUris: [REDIRECT],
      tokenEndpointAuthMethod: "none",
      clientName: "Bench",
    });
    return Response.json({ client_id: client.clientId });
  }
  if (request.method === "POST" && url.pathname === "/seed") {
    const clientId = url.searchParams.get("client_id");
    const count = Number(url.searchParams.get("count"));
    const tokens = [];
    for (let done = 0; done < count; done += 64) {
      const n = Math.min(64, count - done);
      tokens.push(...(await Promise.all(Array.from({ length: n }, () => grant(request, env, ctx, clientId)))));
    }
    return Response.json({ tokens });
  }
  return new Response("not found", { status: 404 });
}

const provider = new OAuthProvider({
  resourceMetadata: { resource: "https://peer.bench/api", authorization_servers: ["https://peer.bench"] },
  apiRoute: "/api",
  apiHandler: { fetch: () => new Response("ok") },
  defaultHandler: { fetch: benchRoutes },
  authorizeEndpoint: "/authorize",
  tokenEndpoint: "/v1/oauth/token",
  scopesSupported: SCOPES,
  accessTokenTTL: 3600,
  refreshTokenTTL: 30 * 86_400,
});

export default provider;
