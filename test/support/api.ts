import { exports } from "cloudflare:workers";
import type { z } from "zod";

export const ORIGIN = "https://svc.test";

let ipCounter = 0;
/** A distinct client address per call, so the per-IP rate limits only bite where a test wants them to. */
export const freshIp = () => `198.51.${Math.floor(++ipCounter / 250) % 250}.${(ipCounter % 250) + 1}`;

type Init = { token?: string; body?: unknown; headers?: Record<string, string>; rawBody?: BodyInit };

/** Calls the Worker like a client over HTTP. */
export async function call(method: string, path: string, init: Init = {}): Promise<Response> {
  const headers: Record<string, string> = { "CF-Connecting-IP": freshIp(), ...init.headers };
  if (init.token) headers.Authorization = `Bearer ${init.token}`;
  let body: BodyInit | undefined = init.rawBody;
  if (init.body !== undefined) {
    body = JSON.stringify(init.body);
    headers["Content-Type"] ??= "application/json";
  }
  return exports.default.fetch(new Request(`${ORIGIN}${path}`, { method, headers, body, redirect: "manual" }));
}

/** Parses a JSON body with the response schema, so a shape drift fails the test. */
export async function parse<T extends z.ZodType>(res: Response, schema: T): Promise<z.infer<T>> {
  return schema.parse(await res.json());
}

export type ProblemBody = {
  type: string;
  title: string;
  status: number;
  code: string;
  detail?: string;
  errors?: { path: string; message: string }[];
};

export async function expectProblem(res: Response, status: number, code?: string): Promise<ProblemBody> {
  const text = await res.text();
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${text}`);
  if (!res.headers.get("Content-Type")?.startsWith("application/problem+json"))
    throw new Error(`not a problem body: ${res.headers.get("Content-Type")}`);
  const body = JSON.parse(text) as ProblemBody;
  if (body.status !== status) throw new Error(`problem status ${body.status} != ${status}`);
  if (code && body.code !== code) throw new Error(`expected code ${code}, got ${body.code}: ${text}`);
  return body;
}
