import type { Context, ErrorHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { logError } from "../platform/log";
import { openAiErrorBody } from "../platform/openai-error";
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
 * How a router answers errors: RFC 9457 problem details, the RFC 6749 OAuth shape, or OpenAI's
 * `{ error: { message, type, code, param } }` (the OpenAI-compatible routes).
 * `malformed` is the OAuth `error` of a request that Hono could not read (415, bad JSON).
 */
export type ErrorFormat = { format: "problem" } | { format: "oauth"; malformed?: string } | { format: "openai" };

export function oauthJson(
  c: Context,
  status: ContentfulStatusCode,
  error: string,
  description: string,
  headers: Record<string, string> = {},
) {
  return c.json({ error, error_description: description }, status, { ...NO_STORE, ...headers });
}

/**
 * The platform's errors in OpenAI's shape: a 401 is `invalid_api_key` (what OpenAI clients look
 * for), every other code stays the problem's; a validation failure names its first field as `param`.
 */
function renderOpenAi(err: unknown, c: Context<AppEnv>): Response | null {
  if (err instanceof ApiError) {
    const code = err.status === 401 ? "invalid_api_key" : err.code;
    const fields = err.errors ?? [];
    // OpenAI's shape has no list of field errors: a schema's refusal says them in its message.
    const message =
      err.code === "validation_failed" && fields.length
        ? `${err.message}: ${fields.map((f) => `${f.path}: ${f.message}`).join("; ")}`
        : err.message;
    const body = openAiErrorBody(err.status, code, message, fields[0]?.path ?? null, err.extra);
    return c.json(body, err.status, err.headers);
  }
  if (err instanceof HTTPException && err.status < 500) {
    const code = err.status === 415 ? "unsupported_media_type" : "malformed_request";
    const message =
      err.status === 415
        ? "The body must be JSON (Content-Type: application/json)"
        : err.message || "Malformed request";
    return c.json(openAiErrorBody(400, code, message), 400);
  }
  return null;
}

/** Renders any thrown error in the router's format; anything unexpected is logged and a 500. */
export function renderError(err: unknown, c: Context<AppEnv>, format: ErrorFormat): Response | Promise<Response> {
  if (format.format === "openai") {
    const rendered = renderOpenAi(err, c);
    if (rendered) return rendered;
  } else if (format.format === "oauth") {
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
  if (format.format === "openai")
    return c.json(openAiErrorBody(500, "internal_error", "An unexpected error occurred"), 500);
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
