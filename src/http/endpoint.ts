import type { OpenAPIHono, RouteConfig, RouteHandler, RouteHook, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { problemResponse } from "../platform/problem";
import type { AppEnv } from "./context";
import {
  type Access,
  type AccessOptions,
  apiRoute,
  createRouter,
  jsonBody,
  jsonResponse,
  type RouteOptions,
} from "./route";

type Method = "get" | "post" | "put" | "patch" | "delete";
/** A route's method and path as HTTP writes them: `"DELETE /v1/agents/{id}"`. */
export type Endpoint = `${Uppercase<Method>} /${string}`;
type MethodOf<E extends Endpoint> = E extends `${infer M} ${string}` ? Lowercase<M> : never;
type PathOf<E extends Endpoint> = E extends `${string} ${infer P}` ? P : never;

type ResponseConfig = RouteConfig["responses"][string];
type Request = NonNullable<RouteConfig["request"]>;
/**
 * A response as a route states it: in full, `[schema, description]` for a JSON body, or its
 * description alone (a problem from 400 on, no body below 400).
 */
type Answer = ResponseConfig | readonly [z.ZodType, string] | string;
type Problem = ReturnType<typeof problemResponse>;
type ResponseOf<K, A> = A extends readonly [infer S extends z.ZodType, string]
  ? { description: string; content: { "application/json": { schema: S } } }
  : A extends string
    ? `${K & (string | number)}` extends `4${string}` | `5${string}`
      ? Problem
      : { description: string }
    : A & ResponseConfig;

/**
 * What a route states besides its access, endpoint and summary. `params`, `query` and `body`
 * (a required JSON body) stand for the same fields of `request`.
 */
export type RouteSpec = Omit<
  RouteConfig,
  "method" | "path" | "tags" | "summary" | "security" | "middleware" | "responses"
> &
  AccessOptions & {
    params?: Request["params"];
    query?: Request["query"];
    body?: z.ZodType;
    responses: Record<number, Answer>;
  };

type RequestOf<S extends RouteSpec> = (S extends { request: infer R extends Request } ? R : object) &
  (S extends { params: infer P extends Request["params"] } ? { params: P } : object) &
  (S extends { query: infer Q extends Request["query"] } ? { query: Q } : object) &
  (S extends { body: infer B extends z.ZodType }
    ? { body: { required: true; content: { "application/json": { schema: B } } } }
    : object);

/** The `RouteConfig` a spec stands for. */
type ConfigOf<S extends RouteSpec> = Omit<S, "params" | "query" | "body" | "request" | "responses"> & {
  request: RequestOf<S>;
  responses: { [K in keyof S["responses"]]: ResponseOf<K, S["responses"][K]> };
};

function answer(status: number, a: Answer): ResponseConfig {
  if (typeof a === "string") return status >= 400 ? problemResponse(a) : { description: a };
  if (Array.isArray(a)) return jsonResponse(a[0], a[1]);
  return a as ResponseConfig;
}

/** The spec as `RouteConfig`: the request's fields in the order the spec states them. */
function configOf<S extends RouteSpec>(spec: S): ConfigOf<S> {
  const { params, query, body, request, responses, ...rest } = spec;
  const fields: Record<string, unknown> = {};
  for (const key of Object.keys(spec)) {
    if (key === "request") Object.assign(fields, request);
    else if (key === "params" || key === "query") fields[key] = spec[key];
    else if (key === "body") fields.body = jsonBody(body);
  }
  const answers = Object.fromEntries(Object.entries(responses).map(([k, a]) => [k, answer(Number(k), a)]));
  return { ...rest, ...(Object.keys(spec).some(isRequestKey) ? { request: fields } : {}), responses: answers } as never;
}
const isRequestKey = (key: string) => key === "request" || key === "params" || key === "query" || key === "body";

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
      { ...configOf(spec), method: method.toLowerCase() as MethodOf<E>, path, tags, summary },
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
