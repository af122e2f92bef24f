import type { RouteConfig } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import type { AppEnv } from "./context";
import { BEARER, SESSION } from "./route";

/**
 * What a browser app may send: its token, JSON, the headers the chat routes read, its D1
 * bookmark, and the ones the `openai` SDK adds to every request (in a browser too), so it
 * works unmodified.
 */
export const CORS_ALLOW_HEADERS = [
  "Authorization",
  "Content-Type",
  "Idempotency-Key",
  "Last-Event-ID",
  "X-Conversation-Id",
  "X-D1-Bookmark",
  "X-Stainless-Arch",
  "X-Stainless-Lang",
  "X-Stainless-OS",
  "X-Stainless-Package-Version",
  "X-Stainless-Retry-Count",
  "X-Stainless-Runtime",
  "X-Stainless-Runtime-Version",
  "X-Stainless-Timeout",
] as const;

/**
 * What a browser app may read beyond the safelisted headers: stream protocol, challenges, retry
 * hints, the D1 bookmark to send back.
 */
export const CORS_EXPOSE_HEADERS = [
  "Content-Type",
  "Content-Disposition",
  "Retry-After",
  "WWW-Authenticate",
  "X-Request-Id",
  "X-Conversation-Id",
  "X-D1-Bookmark",
  "x-vercel-ai-ui-message-stream",
] as const;

const ALLOW_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"];
/** Seconds a browser may keep a preflight's answer: short, so a change of CORS_ORIGINS lands soon. */
const MAX_AGE = 600;

const parsed = new Map<string, ReadonlySet<string>>();
/** The origins of `CORS_ORIGINS` (comma list, exact `scheme://host[:port]`); empty when unset. */
export function corsOrigins(env: Pick<Env, "CORS_ORIGINS">): ReadonlySet<string> {
  const raw = env.CORS_ORIGINS ?? "";
  let origins = parsed.get(raw);
  if (!origins) {
    origins = new Set(
      raw
        .split(",")
        .map((o) => o.trim().replace(/\/+$/, ""))
        .filter(Boolean),
    );
    if (parsed.size >= 8) parsed.clear();
    parsed.set(raw, origins);
  }
  return origins;
}

type Definition = { type: string; route?: Pick<RouteConfig, "method" | "path" | "security"> };
type Operation = { method: string; pattern: RegExp; bearerOnly: boolean };

function compile(definitions: readonly Definition[]): Operation[] {
  return definitions.flatMap((d) => {
    if (d.type !== "route" || !d.route) return [];
    const { method, path, security = [] } = d.route;
    const source = path
      .split(/\{[^}]+\}/)
      .map((s) => s.replace(/[.*+?^$()|[\]\\]/g, "\\$&"))
      .join("[^/]+");
    const schemes = security.flatMap((requirement) => Object.keys(requirement));
    return [
      {
        method: method.toUpperCase(),
        pattern: new RegExp(`^${source}$`),
        bearerOnly: schemes.includes(BEARER) && !schemes.includes(SESSION),
      },
    ];
  });
}

const policy = cors({
  origin: (origin, c) => (corsOrigins(c.env).has(origin) ? origin : null),
  allowMethods: ALLOW_METHODS,
  allowHeaders: [...CORS_ALLOW_HEADERS],
  exposeHeaders: [...CORS_EXPOSE_HEADERS],
  maxAge: MAX_AGE,
  credentials: false,
});

/**
 * CORS for browser apps on the origins of `CORS_ORIGINS`, on bearer-token routes only: the
 * operations of the OpenAPI document whose security is a bearer token and not the sign-in
 * session. Pages, the sign-in and consent forms and every route that takes the session cookie
 * never answer CORS, so another origin can never use a signed-in browser's cookie through them.
 * `definitions` is read on the first request with an origin to check, once for the isolate.
 */
export function bearerCors(definitions: () => Promise<readonly Definition[]>): MiddlewareHandler<AppEnv> {
  let operations: Operation[] | null = null;
  return async (c, next) => {
    const origin = c.req.header("Origin");
    // Browsers apply no CORS to WebSockets; the upgrade's response is left as it is.
    if (!origin || !corsOrigins(c.env).size || c.req.header("Upgrade")) return next();
    const preflight = c.req.method === "OPTIONS" ? c.req.header("Access-Control-Request-Method") : undefined;
    if (c.req.method === "OPTIONS" && !preflight) return next();
    const method = (preflight ?? c.req.method).toUpperCase();
    operations ??= compile(await definitions());
    const path = c.req.path;
    const matched = operations.filter(
      (op) => (op.method === method || (method === "HEAD" && op.method === "GET")) && op.pattern.test(path),
    );
    if (!matched.length || !matched.every((op) => op.bearerOnly)) return next();
    return policy(c, next);
  };
}
