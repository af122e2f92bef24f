import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import worker from "../../src/index";
import { freshIp, ORIGIN } from "./api";

/**
 * The test D1 binding behind a proxy that counts round trips (each batch, and each statement
 * run alone) and records what each session it opens starts from.
 */
export function watchedDb() {
  const trips = { n: 0 };
  const opened: (string | undefined)[] = [];
  const statement = (s: D1PreparedStatement): D1PreparedStatement =>
    new Proxy(s, {
      get(target, key) {
        const value = Reflect.get(target, key);
        if (typeof value !== "function") return value;
        if (key === "bind") return (...args: unknown[]) => statement(value.apply(target, args));
        return (...args: unknown[]) => {
          trips.n++;
          return value.apply(target, args);
        };
      },
    });
  const database = <T extends object>(d: T): T =>
    new Proxy(d, {
      get(target, key) {
        const value = Reflect.get(target, key);
        if (typeof value !== "function") return value;
        if (key === "prepare") return (q: string) => statement(value.call(target, q));
        if (key === "withSession")
          return (from?: string) => {
            opened.push(from);
            return database(value.call(target, from));
          };
        if (key === "batch")
          return (statements: D1PreparedStatement[]) => {
            trips.n++;
            return value.call(target, statements);
          };
        return value.bind(target);
      },
    });
  return { binding: database(env.DB), trips, opened };
}

/**
 * Calls the Worker with `DB` as its D1 binding; `trips` is read when the answer is ready
 * (what the request made, not the audit delivery after it).
 */
export async function fetchWithDb(
  watched: ReturnType<typeof watchedDb>,
  method: string,
  path: string,
  init: { token?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ res: Response; trips: number }> {
  const headers: Record<string, string> = { "CF-Connecting-IP": freshIp(), ...init.headers };
  if (init.token) headers.Authorization = `Bearer ${init.token}`;
  const ctx = createExecutionContext();
  const before = watched.trips.n;
  const res = await worker.fetch(
    new Request(`${ORIGIN}${path}`, { method, headers, body: init.body }),
    { ...env, DB: watched.binding } as Env,
    ctx,
  );
  const trips = watched.trips.n - before;
  await waitOnExecutionContext(ctx);
  return { res, trips };
}
