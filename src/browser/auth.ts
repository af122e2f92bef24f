import type { Context, MiddlewareHandler } from "hono";
import { SUBPROTOCOL_PREFIX } from "../../durable-objects/protocol";
import { bearerToken, resolveBearer } from "../auth/resolve";
import type { AppEnv } from "../http/context";
import { setCaller } from "../http/guards";
import { ApiError } from "../platform/problem";

/** The realm of the local-browser routes' challenges. */
const REALM = "agent-browser";

/**
 * A refusal of the credential: 403 (the spec's status for these routes) with an RFC 6750
 * challenge that names what they take, a personal access token, so a client learns what to
 * send. Without any credential the challenge carries no error code (RFC 6750 §3.1).
 */
function patRefusal(code: "pat_required" | "invalid_token", detail: string, presented: boolean): ApiError {
  const error = presented ? ' error="invalid_token",' : "";
  return new ApiError(403, code, detail, undefined, {
    "WWW-Authenticate": `Bearer realm="${REALM}",${error} error_description="${detail}"`,
  });
}

/**
 * The local-browser routes accept a personal access token only. Every refusal of the
 * credential is 403 (the spec's status for the ask route, kept for connect so both routes
 * answer alike) with a `WWW-Authenticate: Bearer` challenge: no token, an unknown, expired or
 * revoked one, or another credential kind (OAuth access token, session cookie).
 */
async function resolvePat(c: Context<AppEnv>, token: string | null, presented: boolean): Promise<void> {
  if (!token) throw patRefusal("pat_required", "A personal access token (svc_pat_...) is required", presented);
  const resolved = await resolveBearer(c.env, c.var.areas.bearerKinds, token);
  if (!resolved)
    throw patRefusal("invalid_token", "The personal access token (svc_pat_...) is unknown, expired or revoked", true);
  if (resolved.caller.auth !== "pat")
    throw patRefusal(
      "pat_required",
      "The local-browser routes accept a personal access token (svc_pat_...) only",
      true,
    );
  setCaller(c, resolved);
}

/** `Authorization: Bearer svc_pat_…`. */
export const requirePat: MiddlewareHandler<AppEnv> = async (c, next) => {
  const header = c.req.header("Authorization");
  const presented = header !== undefined || c.req.header("Cookie")?.includes("svc_session=") === true;
  await resolvePat(c, bearerToken(header), presented);
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
 * The connect route: the PAT in `Sec-WebSocket-Protocol` (else 403), checked first, so that
 * nothing about the route is told to a caller without one; then a WebSocket upgrade (else 426).
 */
export const requireUpgradeWithPat: MiddlewareHandler<AppEnv> = async (c, next) => {
  const offered = c.req.header("Sec-WebSocket-Protocol");
  const protocol = patSubprotocol(offered);
  const presented = offered !== undefined || c.req.header("Authorization") !== undefined;
  await resolvePat(c, protocol ? protocol.slice(SUBPROTOCOL_PREFIX.length) : null, presented);
  if (c.req.header("Upgrade")?.toLowerCase() !== "websocket") {
    throw new ApiError(426, "upgrade_required", "This endpoint only accepts a WebSocket upgrade", undefined, {
      Upgrade: "websocket",
      Connection: "Upgrade",
    });
  }
  await next();
};
