import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import { isAdmin } from "../auth/caller";
import { bearerToken, resolveBearer, resolveSession, SESSION_COOKIE } from "../auth/resolve";
import { apiResource, usableAt } from "../auth/resources";
import { auditingRefusal, callerEvent } from "../http/audit";
import type { AppEnv } from "../http/context";
import { routesOf } from "../http/endpoint";
import { baseUrl } from "../platform/env";
import { logError } from "../platform/log";
import { AppIdParamsSchema, AppListSchema, AppSchema, toApp } from "./schemas";
import { destroyApp, findVisitedApp, listApps, manifestOf, touchApp } from "./service";
import { APP_CSP, appFileKey, appQuota, appsOrigin } from "./store";

const route = routesOf(["Apps"]);
const origin = (c: Context<AppEnv>) => appsOrigin(c.env, baseUrl(c.env, c.req.url));

route({ scope: "conversations:read" }, "GET /v1/api/apps", "List the workspace's apps", {
  description:
    "Every app of the workspace that is not destroyed (any member sees them all), most recent activity first, with the workspace's quota (`APP_QUOTA`) and how many apps count against it. Agents publish apps with the `publish_app` tool; their pages are served under `url`.",
  responses: { 200: [AppListSchema, "The apps, the quota and the count used"] },
}).handle(async (c) => {
  const caller = c.var.caller;
  const rows = await listApps(c.env, caller.workspace.id);
  const base = origin(c);
  return c.json(
    {
      apps: rows.map((r) => toApp(base, caller.workspace.slug, r)),
      quota: appQuota(c.env),
      used: rows.length,
    },
    200,
  );
});

route({ scope: "conversations:write" }, "DELETE /v1/api/apps/{id}", "Destroy an app", {
  description:
    "Its creator or a workspace admin destroys an app: its pages stop at once, its files are removed, it no longer counts against the quota and its slug is free again. Answers the app in state `destroyed`.",
  params: AppIdParamsSchema,
  responses: {
    200: [AppSchema, "The destroyed app"],
    400: "Malformed app id",
    403: "The caller lacks the scope, or is neither the app's creator nor an admin",
    404: "No such app in this workspace (or already destroyed)",
  },
}).handle(async (c) => {
  const { id } = c.req.valid("param");
  const caller = c.var.caller;
  const destroyed = destroyApp(
    c.env,
    caller.workspace.id,
    { userId: caller.userId, admin: isAdmin(caller) },
    id,
    (app) =>
      callerEvent(c, {
        kind: "app.destroy",
        target: `app:${app.id}`,
        conversationId: app.conversationId,
        details: { slug: app.slug, visibility: app.visibility, size: app.size },
      }),
  );
  const row = await auditingRefusal(c, { kind: "app.destroy", target: `app:${id}` }, destroyed);
  return c.json(toApp(origin(c), caller.workspace.slug, row), 200);
});

// ---- Visitor pages: HTML and assets from R2, not part of the JSON API document ----

/** Every app response, the 404 too: the page runs in an opaque origin, never the service's. */
const SANDBOX_HEADERS: Record<string, string> = {
  "Content-Security-Policy": APP_CSP,
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
};

function notFoundPage(c: Context<AppEnv>) {
  return c.html(
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Not found</title></head><body><h1>Not found</h1></body></html>',
    404,
    { ...SANDBOX_HEADERS, "Cache-Control": "no-store" },
  );
}

/** The workspace of a signed-in visitor (session cookie, or a bearer token for scripts), or null. */
async function visitorWorkspace(c: Context<AppEnv>): Promise<string | null> {
  const header = c.req.header("Authorization");
  if (header !== undefined) {
    const token = bearerToken(header);
    const resolved = token ? await resolveBearer(c.env, c.var.areas.bearerKinds, token) : null;
    // A token bound to another resource (the MCP server's) is not a credential for the API's pages.
    if (resolved && !usableAt(resolved.caller.resource, apiResource(baseUrl(c.env, c.req.url)))) return null;
    return resolved?.caller.workspace.id ?? null;
  }
  const cookie = getCookie(c, SESSION_COOKIE);
  if (!cookie) return null;
  return (await resolveSession(c.env, cookie))?.caller.workspace.id ?? null;
}

/** The file path inside the bundle a request asks for, or null when it cannot name one. */
function bundlePath(rest: string): string | null {
  if (rest === "" || rest.endsWith("/")) rest += "index.html";
  try {
    const path = rest.split("/").map(decodeURIComponent).join("/");
    return path.length > 400 ? null : path;
  } catch {
    return null;
  }
}

async function visit(c: Context<AppEnv>) {
  const { workspace, app } = c.req.param() as { workspace: string; app: string };
  const prefix = `/v1/apps/${workspace}/${app}`;
  const raw = c.req.path;
  if (workspace.length > 64 || app.length > 64 || !raw.startsWith(prefix)) return notFoundPage(c);
  const row = await findVisitedApp(c.env, workspace, app);
  if (!row) return notFoundPage(c);
  // A private app is invisible to anyone but a signed-in member: 404, never a redirect.
  if (row.visibility === "private" && (await visitorWorkspace(c)) !== row.workspaceId) return notFoundPage(c);
  const rest = raw.slice(prefix.length);
  // The app's root is its directory, so relative links resolve inside it.
  if (rest === "")
    return c.body(null, 308, { ...SANDBOX_HEADERS, Location: `${prefix}/`, "Cache-Control": "no-store" });
  const path = bundlePath(rest.slice(1));
  const manifest = manifestOf(row);
  const n = path === null ? -1 : manifest.findIndex((f) => f.path === path);
  const file = manifest[n];
  if (!file) return notFoundPage(c);
  const object = await c.env.FILES.get(appFileKey(row.workspaceId, row.id, n));
  if (!object) return notFoundPage(c);
  c.executionCtx.waitUntil(touchApp(c.env, row).catch((e) => logError("app activity update failed", e)));
  return c.body(object.body, 200, {
    ...SANDBOX_HEADERS,
    "Content-Type": file.content_type,
    "Content-Length": String(object.size),
    "Cache-Control": row.visibility === "private" ? "private, no-store" : "public, no-cache",
    ...(row.visibility === "private" ? { Vary: "Cookie, Authorization" } : {}),
  });
}

route.router.get("/v1/apps/:workspace/:app", visit);
route.router.get("/v1/apps/:workspace/:app/*", visit);

export const appsRouter = route.router;
