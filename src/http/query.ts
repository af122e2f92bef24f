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

/** An optional query parameter that filters a list by `schema`'s value. */
export const queryFilter = <T extends z.ZodType>(name: string, schema: T, description?: string) =>
  schema.optional().openapi({ param: { name, in: "query" }, ...(description ? { description } : {}) });

/**
 * The query of a cursor-paged list: `limit` 1-100 (default 50; out of range is 400) and
 * `cursor`, the `next_cursor` of the previous page. Its response carries `nextCursor`.
 */
export const cursorPageQuery = {
  limit: z
    .string()
    .regex(/^\d{1,3}$/, "must be an integer from 1 to 100")
    .refine((v) => Number(v) >= 1 && Number(v) <= 100, "must be an integer from 1 to 100")
    .optional()
    .transform((v) => (v === undefined ? 50 : Number(v)))
    .openapi({
      param: { name: "limit", in: "query" },
      type: "integer",
      minimum: 1,
      maximum: 100,
      default: 50,
      description: "Rows per page, 1-100; default 50",
    }),
  cursor: z
    .string()
    .max(200)
    .optional()
    .openapi({ param: { name: "cursor", in: "query" }, description: "`next_cursor` of the previous page" }),
};

export const nextCursor = z
  .string()
  .nullable()
  .openapi({ description: "Pass as `cursor` for the next page; null at the end" });
