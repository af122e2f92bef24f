import { z } from "@hono/zod-openapi";

/**
 * OpenAI's error shape, `{ error: { message, type, code, param } }`: what the OpenAI-compatible
 * routes answer instead of a problem, so OpenAI clients read it (the `openai` SDK picks its error
 * class by the status and shows `message`). Extension members (a 402's `balance`, a 502's
 * `provider_status`) sit beside them in `error`.
 */
const buildOpenAIErrorSchema = () =>
  z
    .object({
      error: z
        .looseObject({
          message: z.string(),
          type: z.string().openapi({
            description:
              "`invalid_request_error` (4xx), `insufficient_quota` (402), `requests` (429) or `server_error` (5xx)",
          }),
          code: z
            .string()
            .nullable()
            .openapi({
              description:
                "Stable machine-readable code: `invalid_api_key` (401), `model_not_found`, `insufficient_credits`, " +
                "`insufficient_scope`, `validation_failed`, `unsupported_parameter`, `turn_in_progress`, `model_error`, …",
            }),
          param: z.string().nullable().openapi({ description: "The request field at fault, when one is" }),
        })
        .openapi({
          example: {
            message: "No model named nope",
            type: "invalid_request_error",
            code: "model_not_found",
            param: "model",
          },
        }),
    })
    .openapi("OpenAIError");
let builtOpenAIErrorSchema: ReturnType<typeof buildOpenAIErrorSchema> | undefined;
/** Built on first use (by the routes' OpenAPI entries), not when the isolate starts. */
export const openAIErrorSchema = () => (builtOpenAIErrorSchema ??= buildOpenAIErrorSchema());
export type OpenAIError = z.infer<ReturnType<typeof buildOpenAIErrorSchema>>;

function typeFor(status: number): string {
  if (status === 402) return "insufficient_quota";
  if (status === 429) return "requests";
  return status >= 500 ? "server_error" : "invalid_request_error";
}

export function openAiErrorBody(
  status: number,
  code: string | null,
  message: string,
  param: string | null = null,
  extra?: Record<string, unknown>,
): OpenAIError {
  return { error: { ...extra, message, type: typeFor(status), code, param } };
}

/** Response entries for the OpenAPI document. */
export const openAiErrorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: openAIErrorSchema() } },
});
