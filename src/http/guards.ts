import type { Context, MiddlewareHandler } from "hono";
import { getCookie } from "hono/cookie";
import { type Caller, isAdmin } from "../auth/caller";
import {
  bearerToken,
  type Resolved,
  resolveBearer,
  resolveSession,
  SESSION_COOKIE,
  type WorkspaceRead,
} from "../auth/resolve";
import { apiResource, resourceMetadataUrl, usableAt } from "../auth/resources";
import type { Scope } from "../auth/scopes";
import { baseUrl } from "../platform/env";
import { logError } from "../platform/log";
import { crossOriginWrite } from "../platform/pages";
import { ApiError } from "../platform/problem";
import { auditDenied } from "./audit";
import type { AppEnv } from "./context";

/** Which protected resource a route belongs to, for its 401 challenge and the token's audience. */
export type ResourceRef = {
  /** The resource identifier (RFC 8707) from the service's base URL. */
  of: (base: string) => string;
  /** Scopes named in the 401 challenge (`scope="…"`), if any. */
  challengeScopes?: readonly string[];
};

const API: ResourceRef = { of: apiResource };

/** 401 with the RFC 6750 / RFC 9728 challenge pointing clients at the resource's metadata. */
export function unauthorized(
  env: Env,
  requestUrl: string,
  detail: string,
  tokenPresented: boolean,
  resource: ResourceRef = API,
): ApiError {
  const base = baseUrl(env, requestUrl);
  const metadata = resourceMetadataUrl(base, resource.of(base));
  const scope = resource.challengeScopes?.length ? `, scope="${resource.challengeScopes.join(" ")}"` : "";
  const challenge = tokenPresented
    ? `Bearer error="invalid_token", resource_metadata="${metadata}"${scope}`
    : `Bearer resource_metadata="${metadata}"${scope}`;
  return new ApiError(401, tokenPresented ? "invalid_token" : "unauthenticated", detail, undefined, {
    "WWW-Authenticate": challenge,
  });
}

/** A token bound to another resource (RFC 8707) is invalid here: 401, as for any token not meant for this audience. */
function checkAudience(c: Context<AppEnv>, resolved: Resolved, resource: ResourceRef): void {
  const bound = resolved.caller.resource;
  const here = resource.of(baseUrl(c.env, c.req.url));
  if (!usableAt(bound, here))
    throw unauthorized(
      c.env,
      c.req.url,
      `This access token was issued for ${bound}, not for ${here}; request one for this resource`,
      true,
      resource,
    );
}

/**
 * `Authorization: Bearer` only (no session cookie), for a route of `resource`: a missing,
 * unknown, expired or revoked token, or one bound to another resource, is 401 with that
 * resource's challenge.
 */
export function authenticateBearer(resource: ResourceRef): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const header = c.req.header("Authorization");
    const token = bearerToken(header);
    const resolved = token ? await resolveBearer(c.env, c.var.areas.bearerKinds, token) : null;
    if (!resolved) {
      throw unauthorized(
        c.env,
        c.req.url,
        header === undefined
          ? "Authentication required"
          : "The access token is missing, malformed, unknown, expired or revoked",
        header !== undefined,
        resource,
      );
    }
    checkAudience(c, resolved, resource);
    setCaller(c, resolved);
    await next();
  };
}

/**
 * Resolves `Authorization: Bearer` (PAT or OAuth access token) into `c.var.caller`. Missing,
 * unknown, expired or revoked credentials are 401, and so is an OAuth token bound to another
 * resource than the API (the MCP server's, say). The browser's sign-in session cookie is not a
 * credential here: a request carrying only the cookie is answered like one carrying nothing.
 */
export const authenticate: MiddlewareHandler<AppEnv> = credentials(false);

/**
 * `authenticate`, and also the `svc_session` cookie when no Authorization header is sent, for
 * the few routes that opt in (see `apiRoute`'s `session` option). A cookie-authenticated
 * request that changes state must come from our own origin (see `sessionCaller`).
 */
export const authenticateWithSession: MiddlewareHandler<AppEnv> = credentials(true);

/**
 * `authenticate` (or `authenticateWithSession`) for a route whose first read is `read`: a
 * bearer token's check carries it in the same D1 batch, and the route takes its rows with
 * `prefetched`.
 */
export function authenticateWithRead(read: WorkspaceRead, acceptSession = false): MiddlewareHandler<AppEnv> {
  return credentials(acceptSession, read);
}

/**
 * The rows of `read` when the credential check carried it for the caller's workspace (see
 * `authenticateWithRead`), else undefined: the route then reads them itself.
 */
export function prefetched(c: Context<AppEnv>, read: WorkspaceRead): unknown {
  const along = c.get("along");
  return along?.read === read && along.workspaceId === c.var.caller.workspace.id ? along.result : undefined;
}

function credentials(acceptSession: boolean, read?: WorkspaceRead): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const header = c.req.header("Authorization");
    if (header !== undefined) {
      const token = bearerToken(header);
      const resolved = token ? await resolveBearer(c.env, c.var.areas.bearerKinds, token, Date.now(), read) : null;
      if (!resolved)
        throw unauthorized(
          c.env,
          c.req.url,
          "The access token is missing, malformed, unknown, expired or revoked",
          true,
        );
      checkAudience(c, resolved, API);
      setCaller(c, resolved);
      return next();
    }
    const cookie = getCookie(c, SESSION_COOKIE) !== undefined;
    if (!acceptSession) {
      const detail = cookie
        ? "Authentication required: this route takes a bearer token, not the browser's sign-in session"
        : "Authentication required";
      throw unauthorized(c.env, c.req.url, detail, false);
    }
    if (!(await sessionCaller(c))) throw unauthorized(c.env, c.req.url, "Authentication required", cookie);
    await next();
  };
}

/**
 * The caller of the request's live `svc_session` cookie, made the request's caller; null
 * without one. A state change started by another origin is refused (see `refuseCrossOrigin`)
 * before anything is written, the session's `last_used_at` included.
 */
export async function sessionCaller(c: Context<AppEnv>): Promise<Caller | null> {
  const cookie = getCookie(c, SESSION_COOKIE);
  const resolved = cookie ? await resolveSession(c.env, cookie) : null;
  if (!resolved) return null;
  c.set("caller", resolved.caller);
  await refuseCrossOrigin(c);
  setCaller(c, resolved);
  return resolved.caller;
}

/**
 * A state change started by another origin (a page on a sibling subdomain is "same-site" for
 * the cookie, so SameSite=Lax lets it through) is refused with 403 and audited.
 */
export async function refuseCrossOrigin(c: Context<AppEnv>): Promise<void> {
  if (!crossOriginWrite(c)) return;
  await auditDenied(c, "same_origin");
  throw new ApiError(
    403,
    "cross_origin_request",
    "A request signed in with the browser session must come from this service's own pages",
  );
}

/** Makes a resolved credential the request's caller; its `last_used_at` is written after the response. */
export function setCaller(c: Context<AppEnv>, resolved: Resolved): void {
  const touch = resolved.touch;
  if (touch) c.executionCtx.waitUntil(touch().catch((e) => logError("last_used_at update failed", e)));
  c.set("caller", resolved.caller);
  if (resolved.along) c.set("along", resolved.along);
}

export function requireScope(scope: Scope): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (!c.var.caller.scopes.has(scope)) {
      throw new ApiError(403, "insufficient_scope", `This endpoint requires the scope ${scope}`, undefined, {
        "WWW-Authenticate": `Bearer error="insufficient_scope", scope="${scope}"`,
      });
    }
    await next();
  };
}

/** Refuses (403 `admin_required`, audited) a caller `allowed` does not let through. */
function adminGuard(allowed: (caller: Caller) => boolean, headers?: Record<string, string>): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (!allowed(c.var.caller)) {
      await auditDenied(c, "admin");
      throw new ApiError(403, "admin_required", "This action requires a workspace admin", undefined, headers);
    }
    await next();
  };
}

/** The caller must be a workspace admin whose credential carries the `admin` scope; a refusal is audited. */
export const requireAdmin = adminGuard(isAdmin, {
  "WWW-Authenticate": `Bearer error="insufficient_scope", scope="admin"`,
});

/**
 * The caller must be a workspace admin, whatever its credential's scopes (no scope would
 * help a member, so the refusal carries no scope challenge); a refusal is audited.
 */
export const requireAdminRole = adminGuard((caller) => caller.role === "admin");
