import { Hono } from "hono";
import type { AppEnv } from "./context";
import { errorHandler } from "./errors";

/**
 * A router that declares no route of the contract (the app, a lazy area's dispatcher): it
 * answers errors as problems, as `createRouter`'s do, without loading zod and the OpenAPI
 * generator when the isolate starts.
 */
export function createPlainRouter() {
  const router = new Hono<AppEnv>();
  router.onError(errorHandler({ format: "problem" }));
  return router;
}
