import type { Context, MiddlewareHandler } from "hono";
import { bearerToken } from "../auth/resolve";
import { callerEvent } from "../http/audit";
import type { AppEnv } from "../http/context";
import { routesOf } from "../http/endpoint";
import { NO_STORE, OAuthError } from "../http/errors";
import { contractRoute, createRouter, jsonResponse, ownBody } from "../http/route";
import { baseUrl } from "../platform/env";
import {
  type ClientRow,
  clientByRegistrationToken,
  disableClient,
  registerClient,
  toClientInfo,
  updateClient,
} from "./clients";
import { metadataError, OAuthErrorSchema } from "./errors";
import { readJsonBody } from "./params";
import { ClientIdParamSchema, ClientInfoSchema, RegisterRequestSchema, UpdateClientRequestSchema } from "./schemas";

/**
 * Dynamic client registration (RFC 7591) and client management (RFC 7592). Errors use the
 * OAuth shape; a body that is not JSON or not valid metadata is `invalid_client_metadata`
 * (`invalid_redirect_uri` for the redirect URIs).
 */
export const registrationRouter = createRouter({
  errors: "oauth",
  malformed: "invalid_client_metadata",
  invalid: metadataError,
});

const REGISTRATION_TOKEN = "registration_access_token";
registrationRouter.openAPIRegistry.registerComponent("securitySchemes", REGISTRATION_TOKEN, {
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
const route = routesOf(TAGS, registrationRouter);
const TOO_LARGE = oauthError("invalid_request: the request body exceeds 1 MiB");

route("authenticated", "POST /v1/oauth/register", "Register a client (RFC 7591)", {
  session: true, // the spec names "a valid session or token" of the account
  description:
    "Authenticated by a session or token of the account (workspace) that will own the client; at most 50 active clients per workspace " +
    "(`client_limit_reached`). Clients are always third-party. Confidential clients get a `client_secret` (never expiring) and every client a " +
    "`registration_access_token`, both shown once. Every client receives rotating refresh tokens.",
  body: RegisterRequestSchema,
  responses: {
    201: [ClientInfoSchema, "The registered client, with its secrets"],
    400: oauthError("invalid_redirect_uri, invalid_client_metadata or client_limit_reached"),
    401: oauthError("Missing or invalid credentials"),
    403: oauthError("cross_origin_request: the browser session, from another origin"),
    413: TOO_LARGE,
  },
}).handle(async (c) => {
  const caller = c.var.caller;
  const { info } = await registerClient(
    c.env,
    { workspaceId: caller.workspace.id, userId: caller.userId },
    c.req.valid("json"),
    baseUrl(c.env, c.req.url),
    (client) =>
      callerEvent(c, {
        kind: "oauth.client.register",
        target: `oauth_client:${client.client_id}`,
        intent: "register",
        details: {
          client_id: client.client_id,
          client_name: client.client_name,
          redirect_uris: client.redirect_uris,
          scope: client.scope,
          token_endpoint_auth_method: client.token_endpoint_auth_method,
          grant_types: client.grant_types,
        },
      }),
  );
  return c.json(info, 201, NO_STORE);
});

const managedClients = new WeakMap<Context, ClientRow>();

/**
 * Client management takes the registration access token only (a session or PAT is 401), and
 * the token must be the named client's. Runs before the path is validated, as it always has:
 * a malformed client_id names no client, so it is a 404 like any other.
 */
const requireRegistrationToken: MiddlewareHandler<AppEnv> = async (c, next) => {
  const token = bearerToken(c.req.header("Authorization"));
  const client = token ? await clientByRegistrationToken(c.env, token) : undefined;
  if (!client) {
    throw new OAuthError(401, "invalid_token", "A valid registration access token is required", {
      "WWW-Authenticate": token ? 'Bearer error="invalid_token"' : "Bearer",
    });
  }
  if (client.clientId !== c.req.param("client_id"))
    throw new OAuthError(404, "not_found", "No such client for this registration access token");
  managedClients.set(c, client);
  await next();
};
/** The client `requireRegistrationToken` let through. */
const managedClient = (c: Context): ClientRow => managedClients.get(c)!;

const updateBody = ownBody(registrationRouter, "ClientUpdateRequest", UpdateClientRequestSchema, {
  mediaTypes: ["application/json"],
  invalid: metadataError,
});

const managementRoute = <const M extends "get" | "put" | "delete", const R extends Record<number, object>>(
  method: M,
  summary: string,
  responses: R,
  request: { body?: typeof updateBody.doc } = {},
) =>
  contractRoute({
    method,
    path: "/v1/oauth/register/{client_id}",
    tags: TAGS,
    security: [{ [REGISTRATION_TOKEN]: [] }],
    middleware: [requireRegistrationToken],
    summary,
    request: { params: ClientIdParamSchema, ...request },
    responses: {
      401: oauthError("Missing or invalid registration access token (sessions and PATs are refused)"),
      404: oauthError("The token belongs to another client"),
      ...(method === "get" ? {} : { 413: TOO_LARGE }),
      ...responses,
    },
  });

registrationRouter.openapi(
  managementRoute("get", "Read a client's registration (RFC 7592)", {
    200: jsonResponse(ClientInfoSchema, "The client, without its secret"),
  }),
  (c) => c.json(toClientInfo(managedClient(c), baseUrl(c.env, c.req.url)), 200, NO_STORE),
);

registrationRouter.openapi(
  managementRoute(
    "put",
    "Replace a client's metadata (RFC 7592)",
    {
      200: jsonResponse(ClientInfoSchema, "The updated client, without its secret"),
      400: oauthError(
        "invalid_redirect_uri or invalid_client_metadata (including attempts to change the client type or secret)",
      ),
    },
    { body: updateBody.doc },
  ),
  async (c) => {
    const before = managedClient(c);
    const update = updateBody.parse(await readJsonBody(c.req.raw));
    const base = baseUrl(c.env, c.req.url);
    const updated = await updateClient(c.env, before, update, (after) => {
      const info = toClientInfo(after, base);
      return callerEvent(c, {
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
    });
    const info = toClientInfo(updated, base);
    return c.json(info, 200, NO_STORE);
  },
);

registrationRouter.openapi(
  managementRoute("delete", "Delete a client (RFC 7592)", {
    204: {
      description: "Soft-disabled: it can no longer authorize, exchange, introspect or revoke; its tokens are revoked",
    },
  }),
  async (c) => {
    const client = managedClient(c);
    const actor = { kind: "oauth_client" as const, id: client.clientId };
    await disableClient(c.env, client, {
      deleted: callerEvent(c, {
        kind: "oauth.client.delete",
        workspaceId: client.workspaceId!,
        actor,
        target: `oauth_client:${client.clientId}`,
        intent: "delete",
        details: { client_id: client.clientId },
      }),
      // Its workspace, count and user are filled per workspace in the batch.
      revoked: {
        workspaceId: "",
        kind: "oauth.grant.revoke",
        actor,
        target: `oauth_client:${client.clientId}`,
        intent: "revoke",
        details: { client_id: client.clientId, reason: "client_deleted" },
      },
    });
    return c.body(null, 204);
  },
);
