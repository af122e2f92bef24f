import type { MiddlewareHandler } from "hono";
import { ApiError } from "../platform/problem";
import type { AppEnv } from "./context";

type LimiterName = "SIGNUP_LIMITER" | "SIGNIN_LIMITER" | "TOKEN_LIMITER" | "ENROLL_LIMITER";

/** The client's address as Cloudflare reports it; one bucket for unknown origins. */
export const clientIp = (req: Request): string => req.headers.get("CF-Connecting-IP") ?? "unknown";

/**
 * Per-client-IP limit through the Workers rate-limiting binding: 429 problem with
 * Retry-After when exceeded. `RATE_LIMITS=off` disables it for local load tests only.
 */
export function rateLimit(name: LimiterName, periodSeconds = 60): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (c.env.RATE_LIMITS !== "off") {
      const { success } = await c.env[name].limit({ key: clientIp(c.req.raw) });
      if (!success) {
        throw new ApiError(429, "rate_limited", "Too many requests; try again later", undefined, {
          "Retry-After": String(periodSeconds),
        });
      }
    }
    await next();
  };
}
