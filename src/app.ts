import { Scalar } from "@scalar/hono-api-reference";
import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import { requestId } from "hono/request-id";
import { secureHeaders } from "hono/secure-headers";
import { accountArea } from "./account";
import { adminArea } from "./admin";
import { agentsArea } from "./agents";
import { auditArea } from "./audit";
import { browserArea } from "./browser";
import { healthArea } from "./health";
import { type Area, registryOf } from "./http/area";
import type { AreaRegistry } from "./http/registry";
import { BEARER, createRouter } from "./http/route";
import { oauthArea } from "./oauth";
import { isOAuthJsonPath, oauthErrorHandler } from "./oauth/errors";
import { ApiError, problem } from "./platform/problem";
import { signinArea } from "./signin";
import { workspaceArea } from "./workspace";

const MiB = 1024 * 1024;
/** Routes that accept more than the default 1 MiB body (base64 images). */
const LARGE_BODY_PATHS = /^\/v1\/agents\/[^/]+\/avatar$/;
/**
 * Every area of the service, in order: routes are mounted, erasure steps run and cron jobs
 * fire in this order. A new area exports one `Area` from its folder's index.ts and is added
 * here (and nowhere else).
 */
export const AREAS: readonly Area[] = [
  healthArea,
  accountArea,
  adminArea,
  agentsArea,
  workspaceArea,
  browserArea,
  signinArea,
  oauthArea,
  auditArea, // last: erasure redacts the chain after every other area's step
];

export function createApp(registry: AreaRegistry = registryOf(AREAS)) {
  const app = createRouter();

  app.use(requestId());
  // DENY rather than the default SAMEORIGIN: the sign-in and consent pages must never be framed, and this runs last.
  app.use(secureHeaders({ crossOriginResourcePolicy: false, xFrameOptions: "DENY" }));
  const limits = [1, 2].map((n) =>
    bodyLimit({
      maxSize: n * MiB,
      onError: () => {
        throw new ApiError(413, "payload_too_large", `The request body exceeds ${n} MiB`);
      },
    }),
  );
  app.use((c, next) => (LARGE_BODY_PATHS.test(c.req.path) ? limits[1]! : limits[0]!)(c, next));

  app.use((c, next) => {
    c.set("areas", registry);
    return next();
  });
  for (const area of AREAS) if (area.router) app.route("/", area.router);

  app.openAPIRegistry.registerComponent("securitySchemes", BEARER, {
    type: "http",
    scheme: "bearer",
    description:
      "A personal access token (svc_pat_…) or an OAuth access token (svc_at_…). Scopes are listed per operation.",
  });
  app.doc31("/v1/openapi.json", (c) => ({
    openapi: "3.1.0",
    info: {
      title: "Workspace Agent Service API",
      version: "1.0.0",
      description:
        "Multi-tenant API for configurable AI agents, with a built-in OAuth 2.1 authorization server. Errors are RFC 9457 problem details.",
    },
    servers: [{ url: c.env.BASE_URL || new URL(c.req.url).origin }],
  }));
  app.get("/v1/docs", Scalar({ url: "/v1/openapi.json", pageTitle: "Workspace Agent Service API" }));

  app.notFound((c) => problem(c, 404, "not_found", `No route for ${c.req.method} ${c.req.path}`));
  app.onError((err, c) => {
    // Errors raised before the OAuth router runs (the body limit) still answer in the OAuth shape.
    if (isOAuthJsonPath(c.req.path)) return oauthErrorHandler(err, c);
    if (err instanceof ApiError) {
      for (const [k, v] of Object.entries(err.headers ?? {})) c.header(k, v);
      return problem(c, err.status, err.code, err.message, err.errors);
    }
    if (err instanceof HTTPException) {
      const status = err.status === 415 ? 400 : err.status;
      const code = err.status === 415 ? "unsupported_media_type" : status === 400 ? "malformed_request" : "http_error";
      return problem(c, status as 400, code, err.message || "Bad request");
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
    return problem(c, 500, "internal_error", "An unexpected error occurred");
  });
  return app;
}
