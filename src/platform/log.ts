/**
 * One JSON line on the console for something that went wrong: `msg` says what, `fields` the
 * context (ids, statuses; never a secret), `error` the cause.
 */
export function logError(msg: string, error?: unknown, fields: Record<string, unknown> = {}): void {
  console.error(
    JSON.stringify({ level: "error", msg, ...fields, ...(error === undefined ? {} : { error: String(error) }) }),
  );
}

/** The same line at level `warn`, for a failure the service works around. */
export function logWarning(msg: string, error?: unknown, fields: Record<string, unknown> = {}): void {
  console.warn(
    JSON.stringify({ level: "warn", msg, ...fields, ...(error === undefined ? {} : { error: String(error) }) }),
  );
}
