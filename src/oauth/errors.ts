import { z } from "@hono/zod-openapi";
import type { Context, ErrorHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { AppEnv } from "../http/context";
import { ApiError } from "../platform/problem";

/** Every OAuth endpoint answers errors in the RFC 6749 shape, never as problem bodies. */
export const OAuthErrorSchema = z
  .object({
    error: z.string().openapi({ example: "invalid_request" }),
    error_description: z.string().optional(),
  })
  .openapi("OAuthError");

/** Responses that carry tokens or token errors must not be cached (RFC 6749 §5.1). */
export const NO_STORE = { "Cache-Control": "no-store", Pragma: "no-cache" } as const;

export class OAuthError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly error: string,
    description: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
  }
}

export const invalidRequest = (d: string) => new OAuthError(400, "invalid_request", d);
export const invalidGrant = (d: string) => new OAuthError(400, "invalid_grant", d);

/** `invalid_client` is 401; a client that tried HTTP Basic gets the matching challenge (RFC 6749 §5.2). */
export const invalidClient = (d: string, usedBasic: boolean) =>
  new OAuthError(
    401,
    "invalid_client",
    d,
    usedBasic ? { "WWW-Authenticate": 'Basic realm="oauth", charset="UTF-8"' } : {},
  );

/** RFC 7591 §3.2.2: redirect URI problems are `invalid_redirect_uri`, the rest `invalid_client_metadata`. */
export function metadataError(issues: readonly { path: readonly PropertyKey[]; message: string }[]): OAuthError {
  const issue = issues[0];
  const path = issue?.path.map(String).join(".") ?? "";
  const message = issue ? `${path || "body"}: ${issue.message}` : "The client metadata is invalid";
  return new OAuthError(
    400,
    path.startsWith("redirect_uris") ? "invalid_redirect_uri" : "invalid_client_metadata",
    message,
  );
}

export function oauthJson(
  c: Context,
  status: ContentfulStatusCode,
  error: string,
  description: string,
  headers: Record<string, string> = {},
) {
  return c.json({ error, error_description: description }, status, { ...NO_STORE, ...headers });
}

/** The OAuth endpoints that answer JSON, whose errors keep the OAuth shape wherever they are raised. */
export const isOAuthJsonPath = (path: string): boolean =>
  /^\/v1\/oauth\/(token|introspect|revoke|register)(\/|$)/.test(path);

/**
 * The OAuth router's error handler: OAuth errors as they are, and the platform's own errors
 * (authentication, body size, malformed JSON, rate limits) translated into the OAuth shape.
 */
export const oauthErrorHandler: ErrorHandler<AppEnv> = (err, c) => {
  if (err instanceof OAuthError) return oauthJson(c, err.status, err.error, err.message, err.headers);
  if (err instanceof ApiError) {
    const error =
      err.status === 401 ? "invalid_token" : err.status === 400 || err.status === 413 ? "invalid_request" : err.code;
    return oauthJson(c, err.status, error, err.message, err.headers);
  }
  if (err instanceof HTTPException && err.status < 500) {
    const error = c.req.path.startsWith("/v1/oauth/register") ? "invalid_client_metadata" : "invalid_request";
    return oauthJson(
      c,
      400,
      error,
      err.status === 415
        ? "The body must be JSON (Content-Type: application/json)"
        : err.message || "Malformed request",
    );
  }
  console.error(
    JSON.stringify({
      level: "error",
      request_id: c.get("requestId"),
      path: c.req.path,
      error: String(err),
      stack: (err as Error)?.stack,
    }),
  );
  return oauthJson(c, 500, "server_error", "An unexpected error occurred");
};
