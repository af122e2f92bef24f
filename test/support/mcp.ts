import { exports } from "cloudflare:workers";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION } from "@modelcontextprotocol/sdk/types.js";
import * as oauth from "oauth4webapi";
import { expect } from "vitest";
import { freshIp, ORIGIN } from "./api";
import { authorizationUrl, postConsent, REDIRECT, registerClient, sessionCookie, signIn } from "./oauth";

export const MCP_URL = `${ORIGIN}/v1/mcp`;
export const MCP_RESOURCE = `${ORIGIN}/v1/mcp`;
export const MCP_METADATA = `${ORIGIN}/.well-known/oauth-protected-resource/v1/mcp`;

/** The Worker as a client reaches it over HTTP (a fresh client address per request, like the other tests). */
export const workerFetch = (input: string | URL | Request, init?: RequestInit) => {
  const req = new Request(input, init);
  const headers = new Headers(req.headers);
  headers.set("CF-Connecting-IP", freshIp());
  return exports.default.fetch(new Request(req, { headers, redirect: "manual" }));
};

/** The MCP SDK's client, connected to /v1/mcp with a bearer token. */
export async function mcpClient(token: string): Promise<Client> {
  const client = new Client({ name: "test-client", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(MCP_URL), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    fetch: workerFetch,
  });
  await client.connect(transport);
  return client;
}

/** One JSON-RPC message POSTed as an MCP client would (both media types accepted). */
export function rpc(body: unknown, init: { token?: string; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = {
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    "MCP-Protocol-Version": LATEST_PROTOCOL_VERSION,
    ...init.headers,
  };
  if (init.token) headers.Authorization = `Bearer ${init.token}`;
  return workerFetch(MCP_URL, { method: "POST", headers, body: JSON.stringify(body) });
}

const issuer = new URL(ORIGIN);
const opts = { [oauth.customFetch]: workerFetch } as const;

/**
 * An OAuth access token from the authorization code flow, driven by oauth4webapi: a client
 * registered with `scope`, the user's consent, the exchange (with `resource` at both steps
 * when given).
 */
export async function oauthTokens(
  adminToken: string,
  email: string,
  scope: string,
  resource?: string,
): Promise<oauth.TokenEndpointResponse & { client: oauth.Client }> {
  const as = await oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { ...opts, algorithm: "oauth2" }),
  );
  const registered = await registerClient(adminToken, { scope, client_name: "MCP test client" });
  const client: oauth.Client = { client_id: registered.client_id, token_endpoint_auth_method: "none" };
  const { url, codeVerifier: verifier, state } = await authorizationUrl(as, client, REDIRECT, { scope, resource });
  const session = await signIn(email);
  let res = await workerFetch(url.href, { headers: sessionCookie(session) });
  if (res.status === 200) res = await postConsent(session, await res.text(), "approve");
  expect([302, 303]).toContain(res.status);
  const params = oauth.validateAuthResponse(as, client, new URL(res.headers.get("Location")!), state);
  const tokenRes = await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT, verifier, {
    ...opts,
    additionalParameters: resource ? { resource } : undefined,
  });
  return { ...(await oauth.processAuthorizationCodeResponse(as, client, tokenRes)), client };
}

/** MCP 2026-07-28: the revision the modern era's requests name. */
export const MODERN = "2026-07-28";

/** The per-request `_meta` of a 2026-07-28 request. */
export const modernMeta = (version = MODERN) => ({
  "io.modelcontextprotocol/protocolVersion": version,
  "io.modelcontextprotocol/clientInfo": { name: "raw", version: "0" },
  "io.modelcontextprotocol/clientCapabilities": {},
});

/**
 * One 2026-07-28 request as the spec shapes it: `_meta` in `params`, the `MCP-Protocol-Version`,
 * `Mcp-Method` and (for a named target) `Mcp-Name` headers mirroring the body; `headers`
 * overrides or adds to those.
 */
export function modernRpc(
  method: string,
  params: Record<string, unknown> = {},
  init: { token?: string; headers?: Record<string, string>; id?: string | number; meta?: unknown } = {},
) {
  const headers: Record<string, string> = {
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    "MCP-Protocol-Version": MODERN,
    "Mcp-Method": method,
    ...(typeof params.name === "string" ? { "Mcp-Name": params.name } : {}),
    ...init.headers,
  };
  if (init.token) headers.Authorization = `Bearer ${init.token}`;
  const body = { jsonrpc: "2.0", id: init.id ?? 1, method, params: { ...params, _meta: init.meta ?? modernMeta() } };
  return workerFetch(MCP_URL, { method: "POST", headers, body: JSON.stringify(body) });
}

/** The JSON-RPC messages of an SSE response body, in order. */
export async function sseMessages(res: Response): Promise<Record<string, unknown>[]> {
  return (await res.text())
    .split(/\r?\n/)
    .filter((line) => line.startsWith("data:"))
    .map((line) => line.slice(5).trim())
    .filter(Boolean)
    .map((data) => JSON.parse(data) as Record<string, unknown>);
}
