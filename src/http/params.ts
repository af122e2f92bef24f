import { z } from "@hono/zod-openapi";

/** The `params` of a route whose path addresses one row by `{id}`, a UUID. */
export const idPathParams = (description: string) =>
  z.object({ id: z.uuid().openapi({ param: { name: "id", in: "path" }, description }) });

/** An optional request header of at most `maxLength` characters, as one key of a route's `headers`. */
export const headerParam = (name: string, maxLength: number, description: string) =>
  z
    .string()
    .max(maxLength)
    .optional()
    .openapi({ param: { name, in: "header" }, description });
