import type { OpenAIError } from "./openai-error-schema";

function typeFor(status: number): string {
  if (status === 402) return "insufficient_quota";
  if (status === 429) return "requests";
  return status >= 500 ? "server_error" : "invalid_request_error";
}

/** A body in OpenAI's error shape (its schema, which loads zod, is in openai-error-schema.ts). */
export function openAiErrorBody(
  status: number,
  code: string | null,
  message: string,
  param: string | null = null,
  extra?: Record<string, unknown>,
): OpenAIError {
  return { error: { ...extra, message, type: typeFor(status), code, param } };
}
