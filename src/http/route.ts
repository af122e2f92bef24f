import { createRoute, OpenAPIHono, type RouteConfig } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type { Scope } from "../auth/scopes";
import { ApiError, fieldErrors, problemResponse } from "../platform/problem";
import type { AppEnv } from "./context";
import { authenticate, requireAdmin, requireScope } from "./guards";

/** Who may call a route: public, any authenticated caller, a scope, or a workspace admin. */
export type Access = "public" | "authenticated" | "admin" | { scope: Scope };

export const BEARER = "bearer";

function securityFor(access: Access): RouteConfig["security"] {
  if (access === "public") return [];
  if (access === "authenticated") return [{ [BEARER]: [] }];
  if (access === "admin") return [{ [BEARER]: ["admin"] }];
  return [{ [BEARER]: [access.scope] }];
}

function middlewareFor(access: Access): MiddlewareHandler<AppEnv>[] {
  if (access === "public") return [];
  if (access === "authenticated") return [authenticate];
  if (access === "admin") return [authenticate, requireAdmin];
  return [authenticate, requireScope(access.scope)];
}

const authErrors = (access: Access) =>
  access === "public"
    ? {}
    : {
        401: problemResponse("Missing, unknown, expired or revoked credentials"),
        ...(access === "authenticated" ? {} : { 403: problemResponse("The caller lacks the required scope or role") }),
      };

/**
 * An OpenAPI route whose `security` (documentation) and guard middleware (enforcement)
 * come from one `access` declaration, so the two cannot drift apart.
 */
export function apiRoute<const R extends Omit<RouteConfig, "security" | "middleware">>(
  access: Access,
  route: R,
  extraMiddleware: MiddlewareHandler<AppEnv>[] = [],
) {
  return createRoute({
    ...route,
    security: securityFor(access),
    middleware: [...middlewareFor(access), ...extraMiddleware],
    responses: { ...authErrors(access), ...route.responses },
  });
}

/** A router for one area; validation failures become 400 problems with field `errors`. */
export function createRouter() {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) {
        throw new ApiError(400, "validation_failed", "The request is invalid", fieldErrors(result.error.issues));
      }
    },
  });
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
