import { z } from "@hono/zod-openapi";

/**
 * RFC 9457 problem details, the one error shape of every non-OAuth endpoint. Built on first use
 * (by the routes' OpenAPI entries), not when the isolate starts; one instance, so the document
 * names it once. It lives apart from problem.ts, whose helpers load when the isolate starts,
 * because zod must not.
 */
const buildProblemSchema = () =>
  z
    .object({
      type: z.string().openapi({ example: "about:blank" }),
      title: z.string().openapi({ example: "Bad Request" }),
      status: z.number().int().openapi({ example: 400 }),
      code: z.string().openapi({ example: "invalid_request", description: "Stable machine-readable error code" }),
      detail: z.string().optional(),
      errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
      request_id: z.string().optional(),
    })
    .openapi("Problem");
let builtProblemSchema: ReturnType<typeof buildProblemSchema> | undefined;
export const problemSchema = () => (builtProblemSchema ??= buildProblemSchema());
export type Problem = z.infer<ReturnType<typeof buildProblemSchema>>;

/** Response entries for the OpenAPI document. */
export const problemResponse = (description: string) => ({
  description,
  content: { "application/problem+json": { schema: problemSchema() } },
});
