import { z } from "@hono/zod-openapi";
import { OAuthError } from "../http/errors";

/** Every OAuth endpoint answers errors in the RFC 6749 shape, never as problem bodies. */
export const OAuthErrorSchema = z
  .object({
    error: z.string().openapi({ example: "invalid_request" }),
    error_description: z.string().optional(),
  })
  .openapi("OAuthError");

export const invalidRequest = (d: string) => new OAuthError(400, "invalid_request", d);
export const invalidGrant = (d: string) => new OAuthError(400, "invalid_grant", d);
/** RFC 8707 §2: the `resource` is unknown, or not the one the grant is for. */
export const invalidTarget = (d: string) => new OAuthError(400, "invalid_target", d);

/** `invalid_client` is 401; a client that tried HTTP Basic gets the matching challenge (RFC 6749 §5.2). */
export const invalidClient = (d: string, usedBasic: boolean) =>
  new OAuthError(
    401,
    "invalid_client",
    d,
    usedBasic ? { "WWW-Authenticate": 'Basic realm="oauth", charset="UTF-8"' } : {},
  );

type Issues = readonly { path: readonly PropertyKey[]; message: string; input?: unknown }[];

/** RFC 7591 §3.2.2: redirect URI problems are `invalid_redirect_uri`, the rest `invalid_client_metadata`. */
export function metadataError(issues: Issues): OAuthError {
  const issue = issues[0];
  const path = issue?.path.map(String).join(".") ?? "";
  const message = issue ? `${path || "body"}: ${issue.message}` : "The client metadata is invalid";
  return new OAuthError(
    400,
    path.startsWith("redirect_uris") ? "invalid_redirect_uri" : "invalid_client_metadata",
    message,
  );
}

/**
 * The token request's schema failures, as the token endpoint has always answered them: an
 * unknown `grant_type` is `unsupported_grant_type`, anything else `invalid_request`.
 */
export function tokenRequestError(issues: Issues): OAuthError {
  const issue = issues[0];
  if (issue?.path[0] === "grant_type") {
    return issue.input === undefined
      ? invalidRequest("grant_type is required")
      : new OAuthError(400, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token");
  }
  return invalidRequest(issue?.message ?? "The request is invalid");
}
