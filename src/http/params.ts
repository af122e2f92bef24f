import { z } from "@hono/zod-openapi";

/** The `params` of a route whose path addresses one row by `{id}`, a UUID. */
export const idPathParams = (description: string) =>
  z.object({ id: z.uuid().openapi({ param: { name: "id", in: "path" }, description }) });
