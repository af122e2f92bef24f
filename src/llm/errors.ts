import { APICallError, RetryError } from "ai";
import { logError } from "../platform/log";
import { ApiError } from "../platform/problem";

/** Why a model call failed, as the provider said it: its HTTP status (when it answered) and message. */
export type ModelFailure = { status: number | null; message: string };

const MAX_MESSAGE = 500;

/**
 * The provider's own status and message behind an AI SDK error (the last attempt of a retried
 * call). The configured API key is blanked wherever a provider echoes it.
 */
export function modelFailure(env: Pick<Env, "LLM_API_KEY">, error: unknown): ModelFailure {
  const cause = RetryError.isInstance(error) ? error.lastError : error;
  const status = APICallError.isInstance(cause) ? (cause.statusCode ?? null) : null;
  let message = cause instanceof Error ? cause.message : String(cause);
  if (env.LLM_API_KEY) message = message.replaceAll(env.LLM_API_KEY, "[redacted]");
  return { status, message: message.trim().slice(0, MAX_MESSAGE) };
}

/** The 502 of a turn whose model did not answer: `detail` is the provider's message, `provider_status` its status. */
export function modelError(failure: ModelFailure | null): ApiError {
  return new ApiError(
    502,
    "model_error",
    failure?.message || "The language model did not answer",
    undefined,
    undefined,
    failure?.status ? { provider_status: failure.status } : undefined,
  );
}

/** Logs a failed model call: the provider's status and message only (never the request or a key). */
export function logModelFailure(msg: string, failure: ModelFailure): void {
  logError(msg, failure.message, { provider_status: failure.status });
}
