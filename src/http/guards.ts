import type { Context, MiddlewareHandler } from "hono";
import { getCookie } from "hono/cookie";
import { isAdmin } from "../auth/caller";
import { bearerToken, type Resolved, resolveBearer, resolveSession, SESSION_COOKIE } from "../auth/resolve";
import type { Scope } from "../auth/scopes";
import { baseUrl } from "../platform/env";
import { ApiError } from "../platform/problem";
import { audit } from "./audit";
import type { AppEnv } from "./context";

/** 401 with the RFC 6750 / RFC 9728 challenge pointing clients at the resource metadata. */
export function unauthorized(env: Env, requestUrl: string, detail: string, tokenPresented: boolean): ApiError {
  const metadata = `${baseUrl(env, requestUrl)}/.well-known/oauth-protected-resource`;
  const challenge = tokenPresented
    ? `Bearer error="invalid_token", resource_metadata="${metadata}"`
    : `Bearer resource_metadata="${metadata}"`;
  return new ApiError(401, tokenPresented ? "invalid_token" : "unauthenticated", detail, undefined, {
    "WWW-Authenticate": challenge,
  });
}

/**
 * Resolves `Authorization: Bearer` (PAT or OAuth access token) or the `svc_session` cookie
 * into `c.var.caller`. Missing, unknown, expired or revoked credentials are 401.
 */
export const authenticate: MiddlewareHandler<AppEnv> = async (c, next) => {
  const header = c.req.header("Authorization");
  let resolved = null;
  if (header !== undefined) {
    const token = bearerToken(header);
    if (token) resolved = await resolveBearer(c.env, c.var.areas.bearerKinds, token);
    if (!resolved)
      throw unauthorized(c.env, c.req.url, "The access token is missing, malformed, unknown, expired or revoked", true);
  } else {
    const cookie = getCookie(c, SESSION_COOKIE);
    if (cookie) resolved = await resolveSession(c.env, cookie);
    if (!resolved) throw unauthorized(c.env, c.req.url, "Authentication required", !!cookie);
  }
  setCaller(c, resolved);
  await next();
};

/** Makes a resolved credential the request's caller; its `last_used_at` is written after the response. */
export function setCaller(c: Context<AppEnv>, resolved: Resolved): void {
  const touch = resolved.touch;
  if (touch) c.executionCtx.waitUntil(touch().catch((e) => console.error("last_used_at update failed", e)));
  c.set("caller", resolved.caller);
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

/** The caller must be a workspace admin whose credential carries the `admin` scope; a refusal is audited. */
export const requireAdmin: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!isAdmin(c.var.caller)) {
    await audit(c, {
      kind: "access.denied",
      outcome: "denied",
      target: `route:${c.req.method} ${c.req.routePath}`,
      intent: "admin",
    });
    throw new ApiError(403, "admin_required", "This action requires a workspace admin", undefined, {
      "WWW-Authenticate": `Bearer error="insufficient_scope", scope="admin"`,
    });
  }
  await next();
};
