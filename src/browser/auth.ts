import type { Context, MiddlewareHandler } from "hono";
import { SUBPROTOCOL_PREFIX } from "../../durable-objects/protocol";
import { bearerToken, resolveBearer } from "../auth/resolve";
import type { AppEnv } from "../http/context";
import { setCaller } from "../http/guards";
import { ApiError, forbidden } from "../platform/problem";

/**
 * The local-browser routes accept a personal access token only. Every refusal of the
 * credential is 403 (the spec's status for the ask route, kept for connect so both routes
 * answer alike): no token, an unknown, expired or revoked one, or another credential kind
 * (OAuth access token, session cookie).
 */
async function resolvePat(c: Context<AppEnv>, token: string | null): Promise<void> {
  if (!token) throw forbidden("pat_required", "A personal access token (svc_pat_…) is required");
  const resolved = await resolveBearer(c.env, c.var.areas.bearerKinds, token);
  if (!resolved) throw forbidden("invalid_token", "The personal access token is unknown, expired or revoked");
  if (resolved.caller.auth !== "pat")
    throw forbidden("pat_required", "The local-browser routes accept a personal access token only");
  setCaller(c, resolved);
}

/** `Authorization: Bearer svc_pat_…`. */
export const requirePat: MiddlewareHandler<AppEnv> = async (c, next) => {
  await resolvePat(c, bearerToken(c.req.header("Authorization")));
  await next();
};

/** The offered subprotocol `svc-pat.<token>` (browsers cannot set headers on a WebSocket). */
export function patSubprotocol(header: string | undefined): string | null {
  for (const offered of (header ?? "").split(",")) {
    const p = offered.trim();
    if (p.startsWith(SUBPROTOCOL_PREFIX) && p.length > SUBPROTOCOL_PREFIX.length) return p;
  }
  return null;
}

/**
 * The connect route: a WebSocket upgrade (else 426) carrying the PAT in
 * `Sec-WebSocket-Protocol` (else 403).
 */
export const requireUpgradeWithPat: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (c.req.header("Upgrade")?.toLowerCase() !== "websocket") {
    throw new ApiError(426, "upgrade_required", "This endpoint only accepts a WebSocket upgrade", undefined, {
      Upgrade: "websocket",
      Connection: "Upgrade",
    });
  }
  const protocol = patSubprotocol(c.req.header("Sec-WebSocket-Protocol"));
  await resolvePat(c, protocol ? protocol.slice(SUBPROTOCOL_PREFIX.length) : null);
  await next();
};
