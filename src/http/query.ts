import { z } from "@hono/zod-openapi";

/**
 * An integer query parameter: any safe integer (|n| ≤ 2^53 − 1) is read, then clamped into
 * [min, max] when the operation clamps; anything else (not an integer, or beyond what a
 * JavaScript number holds exactly) is 400. The document declares exactly that range, so the
 * bound the server enforces is the one a client reads.
 */
export function queryInteger(options: {
  name: string;
  default: number;
  clamp?: readonly [min: number, max: number];
  description: string;
}) {
  const { clamp } = options;
  return z
    .string()
    .regex(/^-?\d{1,16}$/, "must be an integer")
    .refine(
      (s) => Number.isSafeInteger(Number(s)),
      `must be between ${-Number.MAX_SAFE_INTEGER} and ${Number.MAX_SAFE_INTEGER}`,
    )
    .optional()
    .transform((s) => {
      const n = s === undefined ? options.default : Number(s);
      return clamp ? Math.min(clamp[1], Math.max(clamp[0], n)) : n;
    })
    .openapi({
      param: { name: options.name, in: "query" },
      type: "integer",
      minimum: -Number.MAX_SAFE_INTEGER,
      maximum: Number.MAX_SAFE_INTEGER,
      default: options.default,
      description: options.description,
    });
}
