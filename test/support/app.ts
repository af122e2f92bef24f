import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import worker from "../../src/index";
import { freshIp, ORIGIN } from "./api";

type Init = { token?: string; body?: unknown; headers?: Record<string, string> };

/**
 * Calls the Worker like `call` does, but with configuration overrides in its env (for
 * example SIGNUP_MODE=closed, or a model provider), the way a deployment with those
 * settings would answer.
 */
export async function callWith(
  overrides: Record<string, unknown>,
  method: string,
  path: string,
  init: Init = {},
): Promise<Response> {
  const headers: Record<string, string> = { "CF-Connecting-IP": freshIp(), ...init.headers };
  if (init.token) headers.Authorization = `Bearer ${init.token}`;
  let body: string | undefined;
  if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers["Content-Type"] ??= "application/json";
  }
  const ctx = createExecutionContext();
  const res = await worker.fetch(
    new Request(`${ORIGIN}${path}`, { method, headers, body }),
    { ...env, ...overrides } as Env,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}
