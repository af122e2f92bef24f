import type { OpenAPIHono, RouteConfig, RouteHandler, RouteHook } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { problemResponse } from "../platform/problem";
import type { AppEnv } from "./context";
import { type Access, type AccessOptions, apiRoute, createRouter, type RouteOptions } from "./route";

type Method = "get" | "post" | "put" | "patch" | "delete";
/** A route's method and path as HTTP writes them: `"DELETE /v1/agents/{id}"`. */
export type Endpoint = `${Uppercase<Method>} /${string}`;
type MethodOf<E extends Endpoint> = E extends `${infer M} ${string}` ? Lowercase<M> : never;
type PathOf<E extends Endpoint> = E extends `${string} ${infer P}` ? P : never;

/** What a route states besides its access, endpoint and summary. */
export type RouteSpec = Omit<RouteConfig, "method" | "path" | "tags" | "summary" | "security" | "middleware"> &
  AccessOptions;

export type RouteExtras = RouteOptions & { middleware?: MiddlewareHandler<AppEnv>[] };

/**
 * The route declarer of one router (a new one unless given; `.router` once the routes are
 * declared): the area's tags are stated once, and each route states only what differs (who
 * may call it, `"METHOD /path"`, its summary, what it takes and answers), then
 * `.handle(handler, hook?)` mounts it on the router.
 */
export function routesOf(tags: string[], router: OpenAPIHono<AppEnv> = createRouter()) {
  const route = <const E extends Endpoint, const S extends RouteSpec>(
    access: Access,
    endpoint: E,
    summary: string,
    spec: S,
    extras: RouteExtras = {},
  ) => {
    const [method, path] = endpoint.split(" ") as [string, PathOf<E>];
    const config = apiRoute(
      access,
      { ...spec, method: method.toLowerCase() as MethodOf<E>, path, tags, summary },
      extras.middleware,
      extras,
    );
    return {
      config,
      handle(handler: RouteHandler<typeof config, AppEnv>, hook?: RouteHook<typeof config, AppEnv>): void {
        router.openapi(config, handler as never, hook as never);
      },
    };
  };
  return Object.assign(route, { router });
}

/** The errors of a route addressing one row by a path parameter: a malformed one (400), or none in the workspace (404). */
export const byIdErrors = (noun: string, malformed = "Malformed id") => ({
  400: problemResponse(malformed),
  404: problemResponse(`No such ${noun} in this workspace`),
});
