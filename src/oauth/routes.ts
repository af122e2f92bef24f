import { createRoute, OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { cors } from "hono/cors";
import { bearerToken } from "../auth/resolve";
import { SCOPES } from "../auth/scopes";
import { audit } from "../http/audit";
import type { AppEnv } from "../http/context";
import { rateLimit } from "../http/rate-limit";
import { apiRoute, jsonBody, jsonResponse } from "../http/route";
import { baseUrl } from "../platform/env";
import { authorizeRouter } from "./authorize-routes";
import { authenticateClient } from "./client-auth";
import {
  type ClientRow,
  clientByRegistrationToken,
  disableClient,
  registerClient,
  toClientInfo,
  updateClient,
} from "./clients";
import { invalidRequest, metadataError, NO_STORE, OAuthError, OAuthErrorSchema, oauthErrorHandler } from "./errors";
import { readJsonBody, readParams } from "./params";
import {
  AUTH_METHODS,
  AuthorizationServerMetadataSchema,
  AuthorizeQuerySchema,
  ClientIdParamSchema,
  ClientInfoSchema,
  IntrospectionSchema,
  ProtectedResourceMetadataSchema,
  RegisterRequestSchema,
  TokenParamsSchema,
  TokenRequestSchema,
  TokenResponseSchema,
  UpdateClientRequestSchema,
} from "./schemas";
import { exchangeCode, introspect, refreshTokens, revokeToken, type TokenOutcome } from "./tokens";

/**
 * The OAuth 2.1 authorization server: metadata (RFC 8414, RFC 9728), registration and client
 * management (RFC 7591, RFC 7592), token (authorization_code with PKCE, rotating refresh
 * tokens), introspection (RFC 7662) and revocation (RFC 7009). Errors use the OAuth shape.
 */
export const oauthRouter = new OpenAPIHono<AppEnv>({
  defaultHook: (result, c) => {
    if (result.success) return;
    throw c.req.path.startsWith("/v1/oauth/register")
      ? metadataError(result.error.issues)
      : invalidRequest(result.error.issues[0]?.message ?? "The request is invalid");
  },
});
oauthRouter.onError(oauthErrorHandler);

// Browser-based public clients call these from their own origin. No cookies are involved,
// so any origin may (the client proves itself with PKCE, its secret or the token itself).
const publicCors = cors({
  origin: "*",
  allowMethods: ["GET", "POST", "OPTIONS"],
  allowHeaders: ["Authorization", "Content-Type"],
  maxAge: 86_400,
});
for (const path of [
  "/.well-known/oauth-authorization-server",
  "/.well-known/oauth-protected-resource",
  "/v1/oauth/token",
  "/v1/oauth/revoke",
]) {
  oauthRouter.use(path, publicCors);
}
oauthRouter.route("/", authorizeRouter);

const REGISTRATION_TOKEN = "registration_access_token";
oauthRouter.openAPIRegistry.registerComponent("securitySchemes", REGISTRATION_TOKEN, {
  type: "http",
  scheme: "bearer",
  description:
    "The registration access token (svc_ratk_…) returned once at registration (RFC 7592). Sessions and other tokens are refused.",
});

const oauthError = (description: string) => ({
  description,
  content: { "application/json": { schema: OAuthErrorSchema } },
});
const TAGS = ["OAuth"];
const GRANTS = ["authorization_code", "refresh_token"];
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

// --- metadata --------------------------------------------------------------------------

oauthRouter.openapi(
  apiRoute("public", {
    method: "get",
    path: "/.well-known/oauth-authorization-server",
    tags: TAGS,
    summary: "Authorization server metadata (RFC 8414)",
    responses: {
      200: jsonResponse(AuthorizationServerMetadataSchema, "The metadata; `issuer` is the service's base URL"),
    },
  }),
  (c) => {
    const base = baseUrl(c.env, c.req.url);
    return c.json(
      {
        issuer: base,
        authorization_endpoint: `${base}/v1/oauth/authorize`,
        token_endpoint: `${base}/v1/oauth/token`,
        registration_endpoint: `${base}/v1/oauth/register`,
        introspection_endpoint: `${base}/v1/oauth/introspect`,
        revocation_endpoint: `${base}/v1/oauth/revoke`,
        scopes_supported: [...SCOPES],
        response_types_supported: ["code"],
        response_modes_supported: ["query"],
        grant_types_supported: GRANTS,
        token_endpoint_auth_methods_supported: [...AUTH_METHODS],
        introspection_endpoint_auth_methods_supported: [...AUTH_METHODS],
        revocation_endpoint_auth_methods_supported: [...AUTH_METHODS],
        code_challenge_methods_supported: ["S256"],
        authorization_response_iss_parameter_supported: true,
        service_documentation: `${base}/v1/docs`,
      },
      200,
      { "Cache-Control": "public, max-age=3600" },
    );
  },
);

oauthRouter.openapi(
  apiRoute("public", {
    method: "get",
    path: "/.well-known/oauth-protected-resource",
    tags: TAGS,
    summary: "Protected resource metadata (RFC 9728)",
    description: 'The API\'s 401 responses point here with `WWW-Authenticate: Bearer resource_metadata="…"`.',
    responses: { 200: jsonResponse(ProtectedResourceMetadataSchema, "The metadata") },
  }),
  (c) => {
    const base = baseUrl(c.env, c.req.url);
    return c.json(
      {
        resource: base,
        authorization_servers: [base],
        scopes_supported: [...SCOPES],
        bearer_methods_supported: ["header"],
        resource_name: "Workspace Agent Service API",
        resource_documentation: `${base}/v1/docs`,
      },
      200,
      { "Cache-Control": "public, max-age=3600" },
    );
  },
);

// --- authorize (implemented by the HTML router; documented here) -------------------------

oauthRouter.openAPIRegistry.registerPath(
  createRoute({
    method: "get",
    path: "/v1/oauth/authorize",
    tags: TAGS,
    summary: "Authorization endpoint (browser)",
    description:
      "Needs the user's session; a signed-out browser is sent to sign-in and back. An unknown or deleted client or a redirect_uri not on the " +
      "allowlist (loopback `http` URIs match on any port) is a 400 page without redirect. Other errors go back to redirect_uri with `error`, " +
      "`state` and `iss`. PKCE with S256 is required. The granted scope is the requested scope ∩ the client's scopes (all of them when none is " +
      "requested). Third-party clients get a consent page the first time and whenever the scopes grow. Success: 302 with `code`, `state`, `iss`.",
    request: { query: AuthorizeQuerySchema },
    responses: {
      302: { description: "Redirect to redirect_uri (code or error), or to sign-in" },
      200: { description: "Consent page (HTML)" },
      400: { description: "Error page (HTML)" },
    },
  }),
);

// --- registration and client management ----------------------------------------------------

oauthRouter.openapi(
  apiRoute("authenticated", {
    method: "post",
    path: "/v1/oauth/register",
    tags: TAGS,
    summary: "Register a client (RFC 7591)",
    description:
      "Authenticated by a session or token of the account (workspace) that will own the client; at most 50 active clients per workspace " +
      "(`client_limit_reached`). Clients are always third-party. Confidential clients get a `client_secret` (never expiring) and every client a " +
      "`registration_access_token`, both shown once. Every client receives rotating refresh tokens.",
    request: { body: jsonBody(RegisterRequestSchema) },
    responses: {
      201: jsonResponse(ClientInfoSchema, "The registered client, with its secrets"),
      400: oauthError("invalid_redirect_uri, invalid_client_metadata or client_limit_reached"),
      401: oauthError("Missing or invalid credentials"),
    },
  }),
  async (c) => {
    const caller = c.var.caller;
    const { info, row } = await registerClient(
      c.env,
      { workspaceId: caller.workspace.id, userId: caller.userId },
      c.req.valid("json"),
      baseUrl(c.env, c.req.url),
    );
    await audit(c, {
      kind: "oauth.client.register",
      target: `oauth_client:${row.clientId}`,
      intent: "register",
      details: {
        client_id: row.clientId,
        client_name: info.client_name,
        redirect_uris: info.redirect_uris,
        scope: info.scope,
        token_endpoint_auth_method: info.token_endpoint_auth_method,
        grant_types: info.grant_types,
      },
    });
    return c.json(info, 201, NO_STORE);
  },
);

/**
 * Client management takes the registration access token only (a session or PAT is 401), and
 * the token must be the named client's.
 */
async function managedClient(c: Context<AppEnv>): Promise<ClientRow> {
  const token = bearerToken(c.req.header("Authorization"));
  const client = token ? await clientByRegistrationToken(c.env, token) : undefined;
  if (!client) {
    throw new OAuthError(401, "invalid_token", "A valid registration access token is required", {
      "WWW-Authenticate": token ? 'Bearer error="invalid_token"' : "Bearer",
    });
  }
  if (client.clientId !== c.req.param("client_id"))
    throw new OAuthError(404, "not_found", "No such client for this registration access token");
  return client;
}

const MANAGEMENT_PATH = "/v1/oauth/register/{client_id}";
const managementDoc = (
  method: "get" | "put" | "delete",
  summary: string,
  responses: Record<number, object>,
  request: object = {},
) =>
  oauthRouter.openAPIRegistry.registerPath(
    createRoute({
      method,
      path: MANAGEMENT_PATH,
      tags: TAGS,
      security: [{ [REGISTRATION_TOKEN]: [] }],
      summary,
      request: { params: ClientIdParamSchema, ...request },
      responses: {
        401: oauthError("Missing or invalid registration access token (sessions and PATs are refused)"),
        404: oauthError("The token belongs to another client"),
        ...responses,
      },
    }),
  );

managementDoc("get", "Read a client's registration (RFC 7592)", {
  200: jsonResponse(ClientInfoSchema, "The client, without its secret"),
});
oauthRouter.get("/v1/oauth/register/:client_id", async (c) => {
  const client = await managedClient(c);
  return c.json(toClientInfo(client, baseUrl(c.env, c.req.url)), 200, NO_STORE);
});

managementDoc(
  "put",
  "Replace a client's metadata (RFC 7592)",
  {
    200: jsonResponse(ClientInfoSchema, "The updated client, without its secret"),
    400: oauthError(
      "invalid_redirect_uri or invalid_client_metadata (including attempts to change the client type or secret)",
    ),
  },
  { body: jsonBody(UpdateClientRequestSchema) },
);
oauthRouter.put("/v1/oauth/register/:client_id", async (c) => {
  const before = await managedClient(c);
  const body = await readJsonBody(c.req.raw);
  const parsed = UpdateClientRequestSchema.safeParse(body);
  if (!parsed.success) throw metadataError(parsed.error.issues);
  const updated = await updateClient(c.env, before, parsed.data);
  const info = toClientInfo(updated, baseUrl(c.env, c.req.url));
  await audit(c, {
    kind: "oauth.client.update",
    workspaceId: before.workspaceId!,
    actor: { kind: "oauth_client", id: before.clientId },
    target: `oauth_client:${before.clientId}`,
    intent: "update",
    details: {
      client_id: before.clientId,
      client_name: info.client_name,
      redirect_uris: info.redirect_uris,
      scope: info.scope,
    },
  });
  return c.json(info, 200, NO_STORE);
});

managementDoc("delete", "Delete a client (RFC 7592)", {
  204: {
    description: "Soft-disabled: it can no longer authorize, exchange, introspect or revoke; its tokens are revoked",
  },
});
oauthRouter.delete("/v1/oauth/register/:client_id", async (c) => {
  const client = await managedClient(c);
  const revoked = await disableClient(c.env, client);
  const total = [...revoked.values()].reduce((n, r) => n + r.count, 0);
  const actor = { kind: "oauth_client" as const, id: client.clientId };
  await audit(c, {
    kind: "oauth.client.delete",
    workspaceId: client.workspaceId!,
    actor,
    target: `oauth_client:${client.clientId}`,
    intent: "delete",
    details: { client_id: client.clientId, revoked_grants: total },
  });
  for (const [workspaceId, r] of revoked) {
    await audit(c, {
      kind: "oauth.grant.revoke",
      workspaceId,
      actor,
      target: `oauth_client:${client.clientId}`,
      intent: "revoke",
      subjectUserId: r.userIds.length === 1 ? r.userIds[0] : null,
      details: { client_id: client.clientId, reason: "client_deleted", count: r.count },
    });
  }
  return c.body(null, 204);
});

// --- token, introspection, revocation ---------------------------------------------------

const formAndJson = <T>(schema: T) => ({
  required: true,
  content: { "application/x-www-form-urlencoded": { schema }, "application/json": { schema } },
});

oauthRouter.openAPIRegistry.registerPath(
  createRoute({
    method: "post",
    path: "/v1/oauth/token",
    tags: TAGS,
    summary: "Token endpoint",
    description:
      "Form (default) or JSON. Client authentication by the registered method only: `none` (client_id), `client_secret_post` or " +
      "`client_secret_basic`. `authorization_code` needs code, code_verifier (PKCE S256) and the authorize step's redirect_uri and client; " +
      "a replayed code revokes the tokens issued from it. `refresh_token` rotates the token and keeps the original scopes; a rotated token " +
      "presented again revokes its whole family (a `scope` parameter on refresh is ignored). Access tokens live 3600 s, refresh tokens 30 days. " +
      "Rate limited per client address (300 requests a minute).",
    request: { body: formAndJson(TokenRequestSchema) },
    responses: {
      200: {
        description: "Tokens (Cache-Control: no-store)",
        content: { "application/json": { schema: TokenResponseSchema } },
      },
      400: oauthError("invalid_request, invalid_grant or unsupported_grant_type"),
      401: oauthError("invalid_client (with WWW-Authenticate: Basic when Basic was used)"),
      429: oauthError("Rate limited"),
    },
  }),
);

/** Token-endpoint events have no signed-in caller: the actor is the client, the workspace the grant's. */
async function auditReuse(
  c: Context<AppEnv>,
  outcome: Extract<TokenOutcome, { ok: false }>,
  tokenKind: "code" | "refresh",
) {
  const r = outcome.reuse;
  if (!r) return;
  await audit(c, {
    kind: "oauth.token.reuse",
    outcome: "denied",
    workspaceId: r.workspaceId,
    actor: { kind: "oauth_client", id: r.clientId },
    target: r.grantId ? `oauth_grant:${r.grantId}` : `oauth_client:${r.clientId}`,
    intent: "reuse",
    subjectUserId: r.userId,
    details: { client_id: r.clientId, token_kind: tokenKind, family_revoked: r.familyRevoked },
  });
}

oauthRouter.post("/v1/oauth/token", rateLimit("TOKEN_LIMITER"), async (c) => {
  const params = await readParams(c.req.raw);
  const client = await authenticateClient(c.env, c.req.header("Authorization"), params);
  const grantType = params.get("grant_type");
  let outcome: TokenOutcome;
  if (grantType === "authorization_code") {
    const code = params.get("code");
    const codeVerifier = params.get("code_verifier");
    const redirectUri = params.get("redirect_uri");
    if (!code || !codeVerifier || !redirectUri)
      throw invalidRequest("code, code_verifier and redirect_uri are required");
    if (!VERIFIER.test(codeVerifier))
      throw invalidRequest("code_verifier must be 43-128 characters of A-Z a-z 0-9 - . _ ~");
    outcome = await exchangeCode(c.env, client.clientId, { code, codeVerifier, redirectUri });
    if (!outcome.ok) await auditReuse(c, outcome, "code");
  } else if (grantType === "refresh_token") {
    const refreshToken = params.get("refresh_token");
    if (!refreshToken) throw invalidRequest("refresh_token is required");
    outcome = await refreshTokens(c.env, client.clientId, refreshToken);
    if (!outcome.ok) await auditReuse(c, outcome, "refresh");
  } else if (grantType === undefined) {
    throw invalidRequest("grant_type is required");
  } else {
    throw new OAuthError(400, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token");
  }
  if (!outcome.ok) throw outcome.error;
  const { grant } = outcome;
  await audit(c, {
    kind: grantType === "authorization_code" ? "oauth.token.issue" : "oauth.token.refresh",
    workspaceId: grant.workspaceId,
    actor: { kind: "oauth_client", id: grant.clientId },
    target: `oauth_grant:${grant.grantId}`,
    intent: grantType === "authorization_code" ? "issue" : "rotate",
    subjectUserId: grant.userId,
    details: { client_id: grant.clientId, scope: outcome.body.scope },
  });
  return c.json(outcome.body, 200, NO_STORE);
});

oauthRouter.openAPIRegistry.registerPath(
  createRoute({
    method: "post",
    path: "/v1/oauth/introspect",
    tags: TAGS,
    summary: "Token introspection (RFC 7662)",
    description:
      'A client sees only its own tokens; any other, unknown, expired or revoked token is `{ "active": false }`.',
    request: { body: formAndJson(TokenParamsSchema) },
    responses: {
      200: { description: "The token's state", content: { "application/json": { schema: IntrospectionSchema } } },
      401: oauthError("invalid_client"),
    },
  }),
);

oauthRouter.post("/v1/oauth/introspect", async (c) => {
  const params = await readParams(c.req.raw);
  const client = await authenticateClient(c.env, c.req.header("Authorization"), params);
  const token = params.get("token");
  return c.json(token ? await introspect(c.env, client.clientId, token) : { active: false }, 200, NO_STORE);
});

oauthRouter.openAPIRegistry.registerPath(
  createRoute({
    method: "post",
    path: "/v1/oauth/revoke",
    tags: TAGS,
    summary: "Token revocation (RFC 7009)",
    description:
      "Revokes the token and its whole family when it belongs to the calling client; otherwise does nothing. Always 200 for an authenticated client.",
    request: { body: formAndJson(TokenParamsSchema) },
    responses: { 200: { description: "Done (empty body)" }, 401: oauthError("invalid_client") },
  }),
);

oauthRouter.post("/v1/oauth/revoke", async (c) => {
  const params = await readParams(c.req.raw);
  const client = await authenticateClient(c.env, c.req.header("Authorization"), params);
  const token = params.get("token");
  const revoked = token ? await revokeToken(c.env, client.clientId, token) : null;
  if (revoked) {
    await audit(c, {
      kind: "oauth.grant.revoke",
      workspaceId: revoked.workspaceId,
      actor: { kind: "oauth_client", id: client.clientId },
      target: `oauth_grant:${revoked.grantId}`,
      intent: "revoke",
      subjectUserId: revoked.userId,
      details: { client_id: client.clientId, reason: "revoked", count: 1 },
    });
  }
  return c.body(null, 200, NO_STORE);
});
