/**
 * The Slack Web API, at `SLACK_API_BASE` (the operator's fixed configuration, never a URL a
 * user chose), so these calls use the platform's `fetch` directly rather than the guarded
 * fetch for user-directed requests: the guard's private-address rules would only stop a
 * local fake, and nothing here follows a user's URL. The one URL Slack hands back (the
 * upload URL) must be https or on the API base's own origin.
 */

// `users:read.email` (with `users:read`) finds a member's Slack account by email, to tell them an approval waits.
export const SLACK_SCOPES = [
  "files:write",
  "chat:write",
  "chat:write.customize",
  "users:read",
  "users:read.email",
] as const;

export const slackApiBase = (env: Env) => (env.SLACK_API_BASE || "https://slack.com/api").replace(/\/+$/, "");

/** Slack's v2 authorize page, on the API base's origin (`https://slack.com/oauth/v2/authorize`). */
export const slackAuthorizeUrl = (env: Env) => `${new URL(slackApiBase(env)).origin}/oauth/v2/authorize`;

/** Slack answered `ok: false` (its `error` string), or could not be reached. */
export class SlackError extends Error {
  constructor(readonly error: string) {
    super(`Slack: ${error}`);
  }
}

/** Errors that mean the stored token no longer works: the install is not live any more. */
export const DEAD_TOKEN_ERRORS = new Set([
  "invalid_auth",
  "not_authed",
  "token_revoked",
  "account_inactive",
  "token_expired",
]);

const TIMEOUT_MS = 15_000;

/** Calls a Web API method with a form body (Slack's upload methods take form arguments only). */
export async function slackCall<T extends Record<string, unknown>>(
  env: Env,
  method: string,
  params: Record<string, string>,
  token?: string,
): Promise<T & { ok: true }> {
  const headers: Record<string, string> = { "Content-Type": "application/x-www-form-urlencoded" };
  if (token) headers.Authorization = `Bearer ${token}`;
  let res: Response;
  try {
    res = await fetch(`${slackApiBase(env)}/${method}`, {
      method: "POST",
      headers,
      body: new URLSearchParams(params).toString(),
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch {
    throw new SlackError("unreachable");
  }
  const body = (await res.json().catch(() => null)) as { ok?: boolean; error?: string } | null;
  if (!body || typeof body !== "object") throw new SlackError(`http_${res.status}`);
  if (body.ok !== true) throw new SlackError(typeof body.error === "string" ? body.error : "unknown_error");
  return body as T & { ok: true };
}

/** Whether Slack's upload URL may be sent bytes: https, or the configured API base's own origin (a local fake). */
export function uploadUrlAllowed(env: Env, url: string): boolean {
  try {
    const u = new URL(url);
    return u.protocol === "https:" || u.origin === new URL(slackApiBase(env)).origin;
  } catch {
    return false;
  }
}

/** Streams `size` bytes to Slack's upload URL (step 2 of the external upload). */
export async function uploadBytes(env: Env, url: string, body: ReadableStream, size: number): Promise<void> {
  if (!uploadUrlAllowed(env, url)) throw new SlackError("upload_url_refused");
  // A fixed-length stream: the request carries Content-Length and the bytes are never buffered whole.
  const fixed = new FixedLengthStream(size);
  const piped = body.pipeTo(fixed.writable);
  let res: Response;
  try {
    res = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/octet-stream" },
      body: fixed.readable,
      signal: AbortSignal.timeout(5 * 60_000),
    });
  } catch {
    throw new SlackError("upload_failed");
  }
  await piped.catch(() => undefined);
  await res.body?.cancel();
  if (!res.ok) throw new SlackError(`upload_http_${res.status}`);
}
