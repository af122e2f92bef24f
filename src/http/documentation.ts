import type { OpenAPIHono } from "@hono/zod-openapi";
import { SESSION_COOKIE } from "../auth/resolve";
import type { Area } from "./area";
import type { AppEnv } from "./context";
import { loadRoutes } from "./lazy-routes";
import { createRouter } from "./route";
import { BEARER, SESSION } from "./security-schemes";

/**
 * The OpenAPI document's app: every area's routes (the lazy ones loaded for it), in the area
 * list's order, and the security schemes.
 */
export async function documentationApp(areas: readonly Area[]): Promise<OpenAPIHono<AppEnv>> {
  const doc = createRouter();
  for (const area of areas) {
    const router = area.router ?? (area.routes && (await loadRoutes(area.routes)));
    if (router) doc.route("/", router);
  }
  doc.openAPIRegistry.registerComponent("securitySchemes", BEARER, {
    type: "http",
    scheme: "bearer",
    description:
      "A personal access token (svc_pat_…) or an OAuth access token (svc_at_…). Scopes are listed per operation; " +
      "`role:admin` means a workspace admin's credential, whatever its scopes.",
  });
  doc.openAPIRegistry.registerComponent("securitySchemes", SESSION, {
    type: "apiKey",
    in: "cookie",
    name: SESSION_COOKIE,
    description:
      "The browser's sign-in session, set by the sign-in page; accepted only by the operations that list it. A state change made with it must come from this service's own origin.",
  });
  doc.doc31("/v1/openapi.json", (c) => ({
    openapi: "3.1.0",
    info: {
      title: "Workspace Agent Service API",
      version: "1.0.0",
      description:
        "Multi-tenant API for configurable AI agents, with a built-in OAuth 2.1 authorization server. Errors are RFC 9457 problem details.",
    },
    servers: [{ url: c.env.BASE_URL || new URL(c.req.url).origin }],
  }));
  return doc;
}
