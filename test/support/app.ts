import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { createApp } from "../../src/app";
import { freshIp, ORIGIN } from "./api";

/**
 * Calls the app with configuration overrides (for example SIGNUP_MODE=closed), the way a
 * deployment with those vars would answer.
 */
export async function callWithEnv(overrides: Partial<Env>, method: string, path: string, body?: unknown): Promise<Response> {
  const ctx = createExecutionContext();
  const req = new Request(`${ORIGIN}${path}`, {
    method,
    headers: { "CF-Connecting-IP": freshIp(), ...(body !== undefined ? { "Content-Type": "application/json" } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const res = await createApp().fetch(req, { ...env, ...overrides }, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}
