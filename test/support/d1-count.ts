import { env } from "cloudflare:workers";

type Statement = D1PreparedStatement;

/**
 * The test env with a D1 binding that counts its round trips: a batch is one, and so is a
 * statement run on its own (`first`, `all`, `run`, `raw`), in a session or not. What a
 * service asks of D1 per call, for the hot paths that promise a number of round trips (and
 * `statements`, for those that promise a number of statements).
 * Durable Objects keep their own env, so the rooms' round trips are not counted.
 */
export function countingD1() {
  const real = new WeakMap<object, Statement>();
  let roundTrips = 0;
  let statements = 0;

  const statement = (s: Statement): Statement => {
    const proxy = new Proxy(s, {
      get(target, prop) {
        if (prop === "bind") return (...values: unknown[]) => statement(target.bind(...values));
        if (prop === "first" || prop === "all" || prop === "run" || prop === "raw")
          return (...args: unknown[]) => {
            roundTrips++;
            statements++;
            return (target[prop] as (...a: unknown[]) => unknown).apply(target, args);
          };
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    real.set(proxy, s);
    return proxy;
  };

  const database = <D extends D1Database | D1DatabaseSession>(d: D): D =>
    new Proxy(d, {
      get(target, prop) {
        if (prop === "prepare") return (query: string) => statement(target.prepare(query));
        if (prop === "batch")
          return (batch: Statement[]) => {
            roundTrips++;
            statements += batch.length;
            return target.batch(batch.map((s) => real.get(s) ?? s));
          };
        if (prop === "withSession")
          return (...args: unknown[]) => database((target as D1Database).withSession(...(args as [string])));
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });

  return {
    env: { ...env, DB: database(env.DB) } as Env,
    /** Round trips since the last call (or since the env was made). */
    take() {
      const n = roundTrips;
      roundTrips = 0;
      statements = 0;
      return n;
    },
    /** Statements since the last `take` (a batch counts each of its own). */
    statements: () => statements,
  };
}
