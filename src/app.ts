import type { OpenAPIHono } from "@hono/zod-openapi";
import { Scalar } from "@scalar/hono-api-reference";
import { requestId } from "hono/request-id";
import { secureHeaders } from "hono/secure-headers";
import { accountArea } from "./account";
import { adminArea } from "./admin";
import { agentsArea } from "./agents";
import { appsArea } from "./apps";
import { artifactsArea } from "./artifacts";
import { auditArea } from "./audit-log";
import { SESSION_COOKIE } from "./auth/resolve";
import { billingArea } from "./billing";
import { browserArea } from "./browser";
import { conversationsArea } from "./conversations";
import { emailArea } from "./email";
import { healthArea } from "./health";
import { type Area, registryOf } from "./http/area";
import type { AppEnv } from "./http/context";
import { bearerCors } from "./http/cors";
import { d1Session } from "./http/d1-session";
import { lazyRoutes, loadRoutes } from "./http/lazy-routes";
import type { AreaRegistry } from "./http/registry";
import { BEARER, createRouter, limitBody, SESSION } from "./http/route";
import { mcpArea } from "./mcp";
import { mcpServerArea } from "./mcp-server";
import { memoryArea } from "./memory";
import { oauthArea } from "./oauth";
import { openaiArea } from "./openai";
import { problem } from "./platform/problem";
import { profileArea } from "./profile";
import { signinArea } from "./signin";
import { skillsArea } from "./skills";
import { teamchatArea } from "./teamchat";
import { workspaceArea } from "./workspace";

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
  billingArea,
  conversationsArea,
  openaiArea, // conversations too, through their service: nothing of its own to erase
  memoryArea,
  artifactsArea, // after the conversations: erasure deletes what is left in no conversation
  skillsArea,
  appsArea, // apps are workspace data: no erase step
  teamchatArea,
  profileArea,
  emailArea,
  mcpArea,
  mcpServerArea,
  auditArea, // last: erasure redacts the chain after every other area's step
];

/** Where the API reference's script is served from: a static asset (see tools/docs-assets.mjs). */
export const DOCS_SCRIPT = "/v1/docs/scalar/standalone.js";

export function createApp(registry: AreaRegistry = registryOf(AREAS)) {
  const app = createRouter();

  app.use(requestId());
  app.use(d1Session);
  // DENY rather than the default SAMEORIGIN: the sign-in and consent pages must never be framed, and this runs last.
  // `same-origin`, not the default `no-referrer`: under that a browser posts our own pages' forms
  // with `Origin: null`, which the session's same-origin check must refuse.
  app.use(secureHeaders({ crossOriginResourcePolicy: false, xFrameOptions: "DENY", referrerPolicy: "same-origin" }));
  app.use((c, next) => {
    c.set("areas", registry);
    return next();
  });
  app.use(bearerCors(async () => (await documentation()).openAPIRegistry.definitions));
  for (const area of AREAS) {
    if (area.router) app.route("/", area.router);
    if (area.routes) app.use(lazyRoutes(area.routes));
  }
  app.get("/v1/openapi.json", async (c) => (await documentation()).fetch(c.req.raw, c.env));
  // The reference's script is a static asset of this Worker (wrangler.toml [assets]), never a CDN's.
  app.get(DOCS_SCRIPT, async (c) => {
    const asset = await c.env.ASSETS.fetch(c.req.raw);
    // A copy: the app's header middleware adds to it, and a fetched response's headers are immutable.
    return new Response(asset.body, asset);
  });
  app.get(
    "/v1/docs",
    Scalar({
      url: "/v1/openapi.json",
      pageTitle: "Workspace Agent Service API",
      cdn: DOCS_SCRIPT,
      // The default fonts come from a font CDN; the system fonts need nothing from outside.
      withDefaultFonts: false,
    }),
  );

  // Registered last, so it runs only for requests no route answered: they too are refused
  // over 1 MiB (413) before the 404. Each route applies its own limit (see `contractRoute`).
  app.use(limitBody());
  app.notFound((c) => problem(c, 404, "not_found", `No route for ${c.req.method} ${c.req.path}`));
  return app;
}

let documented: Promise<OpenAPIHono<AppEnv>> | undefined;

/**
 * The OpenAPI document's app: every area's routes (the lazy ones loaded for it), in the area
 * list's order, and the security schemes. Built on the first request that needs the whole
 * contract (the document, a CORS check), once per isolate.
 */
function documentation(): Promise<OpenAPIHono<AppEnv>> {
  documented ??= (async () => {
    const doc = createRouter();
    for (const area of AREAS) {
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
  })();
  return documented;
}
