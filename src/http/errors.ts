import type { Context, ErrorHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { logError } from "../platform/log";
import { ApiError, problem } from "../platform/problem";
import type { AppEnv } from "./context";

/** Responses that carry tokens or token errors must not be cached (RFC 6749 §5.1). */
export const NO_STORE = { "Cache-Control": "no-store", Pragma: "no-cache" } as const;

/** An error answered in the RFC 6749 shape, `{ error, error_description }`. */
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

/**
 * How a router answers errors: RFC 9457 problem details, or the RFC 6749 OAuth shape.
 * `malformed` is the OAuth `error` of a request that Hono could not read (415, bad JSON).
 */
export type ErrorFormat = { format: "problem" } | { format: "oauth"; malformed?: string };

export function oauthJson(
  c: Context,
  status: ContentfulStatusCode,
  error: string,
  description: string,
  headers: Record<string, string> = {},
) {
  return c.json({ error, error_description: description }, status, { ...NO_STORE, ...headers });
}

/** Renders any thrown error in the router's format; anything unexpected is logged and a 500. */
export function renderError(err: unknown, c: Context<AppEnv>, format: ErrorFormat): Response | Promise<Response> {
  if (format.format === "oauth") {
    if (err instanceof OAuthError) return oauthJson(c, err.status, err.error, err.message, err.headers);
    // The platform's own errors (authentication, body size, rate limits) translated into the OAuth shape.
    if (err instanceof ApiError) {
      const error =
        err.status === 401 ? "invalid_token" : err.status === 400 || err.status === 413 ? "invalid_request" : err.code;
      return oauthJson(c, err.status, error, err.message, err.headers);
    }
    if (err instanceof HTTPException && err.status < 500) {
      const description =
        err.status === 415
          ? "The body must be JSON (Content-Type: application/json)"
          : err.message || "Malformed request";
      return oauthJson(c, 400, format.malformed ?? "invalid_request", description);
    }
  } else {
    if (err instanceof ApiError) {
      for (const [k, v] of Object.entries(err.headers ?? {})) c.header(k, v);
      return problem(c, err.status, err.code, err.message, err.errors, err.extra);
    }
    if (err instanceof OAuthError) {
      for (const [k, v] of Object.entries(err.headers)) c.header(k, v);
      return problem(c, err.status, err.error, err.message);
    }
    if (err instanceof HTTPException) {
      const status = err.status === 415 ? 400 : err.status;
      const code = err.status === 415 ? "unsupported_media_type" : status === 400 ? "malformed_request" : "http_error";
      return problem(c, status as 400, code, err.message || "Bad request");
    }
  }
  logUnhandled(c, err);
  return format.format === "oauth"
    ? oauthJson(c, 500, "server_error", "An unexpected error occurred")
    : problem(c, 500, "internal_error", "An unexpected error occurred");
}

/** Logs an error no handler expected, with the request it broke (the client sees only a 500). */
export function logUnhandled(c: Context<AppEnv>, err: unknown): void {
  logError("unhandled error", err, { request_id: c.get("requestId"), path: c.req.path, stack: (err as Error)?.stack });
}

export const errorHandler =
  (format: ErrorFormat): ErrorHandler<AppEnv> =>
  (err, c) =>
    renderError(err, c, format);
