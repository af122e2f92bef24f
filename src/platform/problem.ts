import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";

/**
 * RFC 9457 problem details, the one error shape of every non-OAuth endpoint. Built on first use
 * (by the routes' OpenAPI entries), not when the isolate starts; one instance, so the document
 * names it once.
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
export type FieldError = { path: string; message: string };

const TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  402: "Payment Required",
  403: "Forbidden",
  404: "Not Found",
  409: "Conflict",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  416: "Range Not Satisfiable",
  426: "Upgrade Required",
  429: "Too Many Requests",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
};

/** Thrown anywhere below a handler; the app's error handler renders it as a problem body. */
export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    detail: string,
    readonly errors?: FieldError[],
    readonly headers?: Record<string, string>,
    /** Extension members of the problem body (RFC 9457 §3.2), e.g. a 402's `balance`. */
    readonly extra?: Record<string, unknown>,
  ) {
    super(detail);
  }
}

export const badRequest = (code: string, detail: string, errors?: FieldError[]) =>
  new ApiError(400, code, detail, errors);
export const notFound = (detail = "Not found") => new ApiError(404, "not_found", detail);
export const forbidden = (code: string, detail: string) => new ApiError(403, code, detail);
export const conflict = (code: string, detail: string) => new ApiError(409, code, detail);

export function problemBody(
  status: number,
  code: string,
  detail?: string,
  errors?: FieldError[],
  requestId?: string,
  extra?: Record<string, unknown>,
): Problem {
  return {
    ...extra,
    type: "about:blank",
    title: TITLES[status] ?? "Error",
    status,
    code,
    ...(detail ? { detail } : {}),
    ...(errors?.length ? { errors } : {}),
    ...(requestId ? { request_id: requestId } : {}),
  };
}

export function problem(
  c: Context,
  status: ContentfulStatusCode,
  code: string,
  detail?: string,
  errors?: FieldError[],
  extra?: Record<string, unknown>,
) {
  const body = problemBody(status, code, detail, errors, c.get("requestId"), extra);
  return c.body(JSON.stringify(body), status, { "Content-Type": "application/problem+json" });
}

/** Zod issues as the `errors` array of a validation problem. */
export function fieldErrors(issues: readonly { path: readonly PropertyKey[]; message: string }[]): FieldError[] {
  return issues.map((i) => ({ path: i.path.map(String).join(".") || "(body)", message: i.message }));
}

/** Response entries for the OpenAPI document. */
export const problemResponse = (description: string) => ({
  description,
  content: { "application/problem+json": { schema: problemSchema() } },
});
