import { cors } from "hono/cors";
import { GRANTABLE_SCOPES } from "../auth/scopes";
import { routesOf } from "../http/endpoint";
import { createRouter } from "../http/route";
import { baseUrl } from "../platform/env";
import { authorizeRouter } from "./authorize-routes";
import { registrationRouter } from "./registration-routes";
import { AUTH_METHODS, AuthorizationServerMetadataSchema, ProtectedResourceMetadataSchema } from "./schemas";
import { tokenRouter } from "./token-routes";

/**
 * The OAuth 2.1 authorization server: metadata (RFC 8414, RFC 9728), registration and client
 * management (RFC 7591, RFC 7592), token (authorization_code with PKCE, rotating refresh
 * tokens), introspection (RFC 7662) and revocation (RFC 7009). Errors use the OAuth shape.
 */
export const oauthRouter = createRouter({ errors: "oauth" });

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
const route = routesOf(["OAuth"], oauthRouter);
const GRANTS = ["authorization_code", "refresh_token"];

// --- metadata --------------------------------------------------------------------------

route("public", "GET /.well-known/oauth-authorization-server", "Authorization server metadata (RFC 8414)", {
  responses: { 200: [AuthorizationServerMetadataSchema, "The metadata; `issuer` is the service's base URL"] },
}).handle((c) => {
  const base = baseUrl(c.env, c.req.url);
  return c.json(
    {
      issuer: base,
      authorization_endpoint: `${base}/v1/oauth/authorize`,
      token_endpoint: `${base}/v1/oauth/token`,
      registration_endpoint: `${base}/v1/oauth/register`,
      introspection_endpoint: `${base}/v1/oauth/introspect`,
      revocation_endpoint: `${base}/v1/oauth/revoke`,
      scopes_supported: [...GRANTABLE_SCOPES],
      response_types_supported: ["code"],
      response_modes_supported: ["query"],
      grant_types_supported: GRANTS,
      token_endpoint_auth_methods_supported: [...AUTH_METHODS],
      introspection_endpoint_auth_methods_supported: [...AUTH_METHODS],
      revocation_endpoint_auth_methods_supported: [...AUTH_METHODS],
      code_challenge_methods_supported: ["S256"],
      authorization_response_iss_parameter_supported: true,
      // A client_id that is an https URL names its Client ID Metadata Document (client-documents.ts).
      client_id_metadata_document_supported: true,
      service_documentation: `${base}/v1/docs`,
    },
    200,
    { "Cache-Control": "public, max-age=3600" },
  );
});

route("public", "GET /.well-known/oauth-protected-resource", "Protected resource metadata (RFC 9728)", {
  description: 'The API\'s 401 responses point here with `WWW-Authenticate: Bearer resource_metadata="…"`.',
  responses: { 200: [ProtectedResourceMetadataSchema, "The metadata"] },
}).handle((c) => {
  const base = baseUrl(c.env, c.req.url);
  return c.json(
    {
      resource: base,
      authorization_servers: [base],
      scopes_supported: [...GRANTABLE_SCOPES],
      bearer_methods_supported: ["header"],
      resource_name: "Workspace Agent Service API",
      resource_documentation: `${base}/v1/docs`,
    },
    200,
    { "Cache-Control": "public, max-age=3600" },
  );
});

oauthRouter.route("/", authorizeRouter);
oauthRouter.route("/", registrationRouter);
oauthRouter.route("/", tokenRouter);
