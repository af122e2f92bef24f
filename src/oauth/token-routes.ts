import type { Context } from "hono";
import { canonicalResource } from "../auth/resources";
import type { AppEnv } from "../http/context";
import { NO_STORE } from "../http/errors";
import { rateLimit } from "../http/rate-limit";
import { apiRoute, createRouter, ownBody } from "../http/route";
import { baseUrl } from "../platform/env";
import { authenticateClient, presentedCredentials, revocationClient } from "./client-auth";
import { exchangeCode } from "./code-exchange";
import { invalidRequest, invalidTarget, OAuthErrorSchema, tokenRequestError } from "./errors";
import { introspect } from "./introspection";
import { readParams } from "./params";
import { refreshRequest, refreshTokens } from "./refresh";
import { revokeToken } from "./revocation";
import { IntrospectionSchema, TokenParamsSchema, TokenRequestSchema, TokenResponseSchema } from "./schemas";

/** Token (authorization_code with PKCE, rotating refresh tokens), introspection (RFC 7662), revocation (RFC 7009). */
export const tokenRouter = createRouter({ errors: "oauth" });

const oauthError = (description: string) => ({
  description,
  content: { "application/json": { schema: OAuthErrorSchema } },
});
const TAGS = ["OAuth"];
const TOO_LARGE = oauthError("invalid_request: the request body exceeds 1 MiB");
/** The refusals of introspection and revocation, both a client's request about one token. */
const CLIENT_REQUEST_ERRORS = {
  400: oauthError(
    "invalid_request: a body that is neither a form nor a JSON object of strings, or a repeated parameter",
  ),
  401: oauthError("invalid_client"),
  413: TOO_LARGE,
};
const FORM_AND_JSON = ["application/x-www-form-urlencoded", "application/json"];

const tokenBody = ownBody(tokenRouter, "TokenRequest", TokenRequestSchema, {
  mediaTypes: FORM_AND_JSON,
  invalid: tokenRequestError,
});
const tokenParamsBody = ownBody(tokenRouter, "TokenParams", TokenParamsSchema, {
  mediaTypes: FORM_AND_JSON,
  invalid: (issues) => invalidRequest(issues[0]?.message ?? "The request is invalid"),
});

/**
 * Reads a client's request (form or JSON, by the rules of params.ts) unless it was read, authenticates
 * the client from it, then parses it with the body's schema: a client that cannot authenticate
 * hears `invalid_client` before anything about its parameters.
 */
async function clientRequest<T, C>(
  c: Context<AppEnv>,
  body: { parse: (input: unknown) => T },
  authenticate: (...args: Parameters<typeof authenticateClient>) => Promise<C>,
  read?: Map<string, string>,
) {
  const params = read ?? (await readParams(c.req.raw));
  const client = await authenticate(c.env, c.req.header("Authorization"), params, baseUrl(c.env, c.req.url));
  return { client, request: body.parse(Object.fromEntries(params)) };
}

tokenRouter.openapi(
  apiRoute(
    "public",
    {
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
      request: { body: tokenBody.doc },
      responses: {
        200: {
          description: "Tokens (Cache-Control: no-store)",
          content: { "application/json": { schema: TokenResponseSchema } },
        },
        400: oauthError("invalid_request, invalid_grant, invalid_target or unsupported_grant_type"),
        401: oauthError(
          "invalid_client (with WWW-Authenticate: Basic when Basic was used); for a Client ID Metadata Document, also a document that cannot be fetched or used",
        ),
        413: TOO_LARGE,
        429: oauthError("Rate limited"),
      },
    },
    [rateLimit("TOKEN_LIMITER")],
  ),
  async (c) => {
    const params = await readParams(c.req.raw);
    // The common refresh authenticates its client in the rotation's own batch: one round trip.
    const refresh = refreshRequest(c.req.header("Authorization"), params, baseUrl(c.env, c.req.url));
    if (refresh) return c.json((await refreshTokens(c.env, refresh)).body, 200, NO_STORE);
    const { client, request } = await clientRequest(c, tokenBody, authenticateClient, params);
    let resource: string | null = null;
    if (request.resource !== undefined) {
      resource = canonicalResource(baseUrl(c.env, c.req.url), request.resource);
      if (!resource) throw invalidTarget("resource must be this API or its MCP server (RFC 8707)");
    }
    const issued =
      request.grant_type === "authorization_code"
        ? await exchangeCode(c.env, client.clientId, {
            code: request.code!,
            codeVerifier: request.code_verifier!,
            redirectUri: request.redirect_uri!,
            resource,
          })
        : await refreshTokens(c.env, {
            client: { ...presentedCredentials(c.req.header("Authorization"), params), clientId: client.clientId },
            refreshToken: request.refresh_token!,
            resource,
          });
    // The issue or rotation event was written with the tokens (actor: the client; workspace: the grant's).
    return c.json(issued.body, 200, NO_STORE);
  },
);

tokenRouter.openapi(
  apiRoute("public", {
    method: "post",
    path: "/v1/oauth/introspect",
    tags: TAGS,
    summary: "Token introspection (RFC 7662)",
    description:
      'A client sees only its own tokens; any other, unknown, expired or revoked token is `{ "active": false }`.',
    request: { body: tokenParamsBody.doc },
    responses: {
      200: { description: "The token's state", content: { "application/json": { schema: IntrospectionSchema } } },
      ...CLIENT_REQUEST_ERRORS,
    },
  }),
  async (c) => {
    const { client, request } = await clientRequest(c, tokenParamsBody, authenticateClient);
    const state = request.token ? await introspect(c.env, client.clientId, request.token) : { active: false };
    return c.json(state, 200, NO_STORE);
  },
);

tokenRouter.openapi(
  apiRoute("public", {
    method: "post",
    path: "/v1/oauth/revoke",
    tags: TAGS,
    summary: "Token revocation (RFC 7009)",
    description:
      "Revokes the token and its whole family when it belongs to the calling client; otherwise does nothing. Always 200, also when " +
      "client_id is missing or names no active client, or the token is unknown or another client's (RFC 7009 §2.2); only a known " +
      "client that fails to authenticate (a confidential client's missing or wrong secret) is 401.",
    request: { body: tokenParamsBody.doc },
    responses: {
      200: { description: "Done (empty body)" },
      400: oauthError(
        "invalid_request: a body that is neither a form nor a JSON object of strings, or a repeated parameter",
      ),
      401: oauthError("invalid_client: a known client's secret did not verify"),
      413: TOO_LARGE,
    },
  }),
  async (c) => {
    const { client, request } = await clientRequest(c, tokenParamsBody, revocationClient);
    if (client && request.token) await revokeToken(c.env, client.clientId, request.token);
    return c.body(null, 200, NO_STORE);
  },
);
