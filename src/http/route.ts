import { createRoute, OpenAPIHono, type RouteConfig, type z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import type { WorkspaceRead } from "../auth/resolve";
import type { Scope } from "../auth/scopes";
import { ApiError, fieldErrors, problemResponse } from "../platform/problem";
import type { AppEnv } from "./context";
import { type ErrorFormat, errorHandler, OAuthError } from "./errors";
import {
  authenticate,
  authenticateWithRead,
  authenticateWithSession,
  requireAdmin,
  requireAdminRole,
  requireScope,
} from "./guards";

/**
 * Who may call a route: public, any authenticated caller, a scope, a workspace admin whose
 * credential carries the `admin` scope, or (`admin-role`) a workspace admin with any scope.
 */
export type Access = "public" | "authenticated" | "admin" | "admin-role" | { scope: Scope };

/** How the document names the `admin-role` requirement: a role, not a scope (OpenAPI 3.1 allows role names). */
export const ADMIN_ROLE = "role:admin";

export const BEARER = "bearer";
/** The browser's sign-in session cookie, accepted only where a route says `session: true`. */
export const SESSION = "session";

function securityFor(access: Access): RouteConfig["security"] {
  if (access === "public") return [];
  if (access === "authenticated") return [{ [BEARER]: [] }];
  if (access === "admin") return [{ [BEARER]: ["admin"] }];
  if (access === "admin-role") return [{ [BEARER]: [ADMIN_ROLE] }];
  return [{ [BEARER]: [access.scope] }];
}

function middlewareFor(access: Access, auth = authenticate): MiddlewareHandler<AppEnv>[] {
  if (access === "public") return [];
  if (access === "authenticated") return [auth];
  if (access === "admin") return [auth, requireAdmin];
  if (access === "admin-role") return [auth, requireAdminRole];
  return [auth, requireScope(access.scope)];
}

const authErrors = (access: Access) =>
  access === "public"
    ? {}
    : {
        401: problemResponse("Missing, unknown, expired or revoked credentials"),
        ...(access === "authenticated" ? {} : { 403: problemResponse("The caller lacks the required scope or role") }),
      };

export const MiB = 1024 * 1024;

const limits = new Map<number, MiddlewareHandler<AppEnv>>();
/**
 * Refuses a body over `maxBytes` with 413 (streamed bodies too, while they are read). It runs
 * inside the route, so the 413 comes in the error format of the router that declares the route.
 */
export function limitBody(maxBytes = MiB): MiddlewareHandler<AppEnv> {
  let limit = limits.get(maxBytes);
  if (!limit) {
    limit = bodyLimit({
      maxSize: maxBytes,
      onError: () => {
        throw new ApiError(413, "payload_too_large", `The request body exceeds ${maxBytes / MiB} MiB`);
      },
    });
    limits.set(maxBytes, limit);
  }
  return limit;
}

/**
 * For a route that reads its own body as a stream (an upload): a declared `Content-Length`
 * over `maxBytes` is refused with 413 at once, and the stream is left untouched, so the
 * handler counts the bytes as it reads them (Hono's body limit would buffer a body of
 * unknown length whole before the handler sees it).
 */
export function limitDeclaredBody(maxBytes: number): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const declared = c.req.header("Content-Length");
    if (declared !== undefined && Number(declared) > maxBytes)
      throw new ApiError(413, "payload_too_large", `The request body exceeds ${maxBytes / MiB} MiB`);
    await next();
  };
}

export type RouteOptions = {
  /** The largest request body the route accepts; 1 MiB unless it says otherwise. */
  maxBodyBytes?: number;
  /**
   * The handler streams the body and enforces `maxBodyBytes` itself while reading; the
   * contract then refuses only a declared `Content-Length` above it (see `limitDeclaredBody`).
   */
  streamedBody?: boolean;
  /**
   * The route's first read, when it depends only on the caller's workspace: the credential
   * check makes it in its own D1 batch (see `authenticateWithRead`; the handler takes the rows
   * with `prefetched`).
   */
  read?: WorkspaceRead;
};

/**
 * `createRoute` plus what every route of the contract enforces first: the body limit, and the
 * 413 it answers in the document (a request with a body can always meet it; a GET has none).
 * A route whose errors are not problems (OAuth) declares its own 413.
 */
export function contractRoute<const R extends RouteConfig>(route: R, options: RouteOptions = {}) {
  const own = route.middleware ? [route.middleware].flat() : [];
  const maxBytes = options.maxBodyBytes ?? MiB;
  const limit = options.streamedBody && options.maxBodyBytes ? limitDeclaredBody(maxBytes) : limitBody(maxBytes);
  const responses: RouteConfig["responses"] =
    route.method === "get" || route.method === "head"
      ? route.responses
      : {
          413: problemResponse(`\`payload_too_large\`: the request body exceeds ${maxBytes / MiB} MiB`),
          ...route.responses,
        };
  return createRoute({ ...route, middleware: [limit, ...own], responses: responses as R["responses"] });
}

/** What a route definition may add to `RouteConfig`, read by `apiRoute` and not passed on. */
export type AccessOptions = {
  /**
   * The route also takes the browser's sign-in session (the `svc_session` cookie) when no
   * Authorization header is sent; a state change made with it must come from our own origin.
   * Every other route takes bearer tokens only.
   */
  session?: boolean;
};

/**
 * An OpenAPI route whose `security` (documentation) and guard middleware (enforcement)
 * come from one `access` declaration, so the two cannot drift apart.
 */
export function apiRoute<const R extends Omit<RouteConfig, "security" | "middleware"> & AccessOptions>(
  access: Access,
  route: R,
  extraMiddleware: MiddlewareHandler<AppEnv>[] = [],
  options: RouteOptions = {},
) {
  const { session, ...config } = route;
  const security = securityFor(access);
  return contractRoute(
    {
      ...config,
      security: session && security?.length ? [...security, { [SESSION]: [] }] : security,
      middleware: [
        ...middlewareFor(
          access,
          options.read ? authenticateWithRead(options.read, session) : session ? authenticateWithSession : authenticate,
        ),
        ...extraMiddleware,
      ],
      responses: { ...authErrors(access), ...config.responses },
    },
    options,
  );
}

type Issues = readonly { path: readonly PropertyKey[]; message: string }[];

export type RouterOptions = {
  /** How the router's errors are rendered: RFC 9457 problems (the default), the OAuth shape or OpenAI's. */
  errors?: ErrorFormat["format"];
  /** OAuth routers: the `error` of a request Hono could not read (415, malformed JSON); `invalid_request` by default. */
  malformed?: string;
  /** How a request that fails its schema is refused; by default a 400 `validation_failed` problem or OAuth `invalid_request`. */
  invalid?: (issues: Issues) => Error;
};

function invalidRequest(options: RouterOptions, issues: Issues): Error {
  if (options.invalid) return options.invalid(issues);
  if (options.errors === "oauth")
    return new OAuthError(400, "invalid_request", issues[0]?.message ?? "The request is invalid");
  return new ApiError(400, "validation_failed", "The request is invalid", fieldErrors(issues));
}

/**
 * The validation hook of a route whose credential is a body field (a one-time token): any
 * issue with that field, its absence included, is `refusal()` (the route's 403, as for a
 * missing credential) and is checked before the other fields, whose issues stay a 400.
 */
export function credentialField(field: string, refusal: () => Error) {
  return (result: { success: true } | { success: false; error: { issues: Issues } }): undefined => {
    if (result.success) return undefined;
    if (result.error.issues.some((i) => i.path[0] === field)) throw refusal();
    throw invalidRequest({}, result.error.issues);
  };
}

/** A router for one area, answering every error (validation failures too) in the format it declares. */
export function createRouter(options: RouterOptions = {}) {
  const router = new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) throw invalidRequest(options, result.error.issues);
    },
  });
  router.onError(
    errorHandler(
      options.errors === "oauth"
        ? { format: "oauth", malformed: options.malformed }
        : { format: options.errors ?? "problem" },
    ),
  );
  return router;
}

/** JSON request body that must be present and be JSON. */
export const jsonBody = <T>(schema: T, description?: string) => ({
  required: true,
  description,
  content: { "application/json": { schema } },
});

export const jsonResponse = <T>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

/**
 * The body of a route that reads it by its own rules (OAuth's form-or-JSON parameters, where
 * a repeated name is refused) and then parses it with `schema`, the schema that documents it.
 * zod-openapi validates only the schemas embedded in a route, so the document references
 * `schema`'s component instead, under each media type the route reads.
 */
export function ownBody<S extends z.ZodType>(
  router: OpenAPIHono<AppEnv>,
  name: string,
  schema: S,
  options: { mediaTypes: readonly string[]; invalid: (issues: Issues) => Error },
) {
  router.openAPIRegistry.register(name, schema);
  const ref = { $ref: `#/components/schemas/${name}` };
  return {
    doc: { required: true, content: Object.fromEntries(options.mediaTypes.map((type) => [type, { schema: ref }])) },
    /** The parsed body, or `invalid(issues)` thrown; issues carry their `input`. */
    parse(input: unknown): z.output<S> {
      const result = schema.safeParse(input, { reportInput: true });
      if (!result.success) throw options.invalid(result.error.issues);
      return result.data;
    },
  };
}
