import type { Context, Hono, MiddlewareHandler } from "hono";
import type { AppEnv } from "./context";
import { createRouter } from "./route";

/**
 * An area's routes, evaluated on the first request under one of their paths: building the
 * routes (their schemas, validators and handlers) of every area when an isolate starts would
 * cost each request's startup for the one area it calls.
 */
export type LazyRoutes = {
  /** Every route of the area is at one of these paths or under it (`/v1/agents` covers `/v1/agents/{id}`). */
  paths: readonly string[];
  /** The area's router, from a module imported with `import()`. */
  load: () => Promise<Hono<AppEnv>>;
};

const loaded = new WeakMap<LazyRoutes, Promise<Hono<AppEnv>>>();

/** The area's router, loaded once per isolate. */
export function loadRoutes(routes: LazyRoutes): Promise<Hono<AppEnv>> {
  let router = loaded.get(routes);
  if (!router) {
    router = routes.load();
    loaded.set(routes, router);
  }
  return router;
}

export const covers = (routes: LazyRoutes, path: string) =>
  routes.paths.some((p) => path === p || path.startsWith(`${p}/`));

/** The app's context of a request its area's router is answering (for the variables it set). */
const outerContexts = new WeakMap<Request, Context<AppEnv>>();
/** Requests the area's router had no route for. */
const missed = new WeakSet<Request>();

/** The area's router behind the app's middleware: the app's variables, and a miss handed back. */
function dispatcher(router: Hono<AppEnv>): Hono<AppEnv> {
  const app = createRouter();
  app.use((c, next) => {
    const outer = outerContexts.get(c.req.raw);
    if (outer) for (const [name, value] of Object.entries(outer.var)) c.set(name as "requestId", value as string);
    return next();
  });
  app.route("/", router);
  app.notFound((c) => {
    missed.add(c.req.raw);
    return c.body(null, 404);
  });
  return app;
}

function executionCtx(c: Context<AppEnv>) {
  try {
    return c.executionCtx;
  } catch {
    return undefined; // `app.request` in tests: no context
  }
}

/**
 * The app's middleware for one area's lazy routes, at the area's place in the app: a request
 * under the area's paths loads them and is answered by them; one they have no route for goes
 * on to the next area, and finally to the app's 404, as if the routes were mounted in the app.
 */
export function lazyRoutes(routes: LazyRoutes): MiddlewareHandler<AppEnv> {
  let app: Promise<Hono<AppEnv>> | undefined;
  return async (c, next) => {
    if (!covers(routes, c.req.path)) return next();
    app ??= loadRoutes(routes).then(dispatcher);
    const request = c.req.raw;
    outerContexts.set(request, c);
    const res = await (await app).fetch(request, c.env, executionCtx(c));
    if (missed.delete(request)) return next();
    // Headers the app's middleware set before the area answered (the request id, CORS) wait in
    // the app's context for a response built through it; reading `c.res` builds one, and Hono
    // copies its headers onto the area's response when that replaces it.
    c.res.headers;
    return res;
  };
}
