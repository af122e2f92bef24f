import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { ApiError } from "../platform/problem";
import type { AppEnv } from "./context";

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
