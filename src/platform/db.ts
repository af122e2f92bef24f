import { type DrizzleD1Database, drizzle } from "drizzle-orm/d1";

export type Db = DrizzleD1Database;

// One Drizzle instance per D1 binding object; safe to lose.
const cache = new WeakMap<D1Database, Db>();

export function db(env: Env): Db {
  let d = cache.get(env.DB);
  if (!d) {
    d = drizzle(env.DB);
    cache.set(env.DB, d);
  }
  return d;
}

/**
 * Memoizes prepared statements per D1 binding: building a Drizzle query costs far more
 * than running a prepared one, so hot paths prepare once per isolate.
 */
export function preparedFor<T>(build: (d: Db) => T): (env: Env) => T {
  const memo = new WeakMap<D1Database, T>();
  return (env) => {
    let p = memo.get(env.DB);
    if (!p) {
      p = build(db(env));
      memo.set(env.DB, p);
    }
    return p;
  };
}

/** True when a D1 error is a UNIQUE constraint violation. */
export function isUniqueViolation(e: unknown): boolean {
  const msg = e instanceof Error ? `${e.message} ${String((e as { cause?: unknown }).cause ?? "")}` : String(e);
  return /UNIQUE constraint failed|SQLITE_CONSTRAINT/i.test(msg);
}

export const parseJsonArray = (s: string | null | undefined): string[] => {
  if (!s) return [];
  const v: unknown = JSON.parse(s);
  return Array.isArray(v) ? v.map(String) : [];
};

/** A Drizzle query as a D1 statement, for a batch of raw statements. */
export function d1Statement(env: Env, query: { toSQL(): { sql: string; params: unknown[] } }): D1PreparedStatement {
  const { sql, params } = query.toSQL();
  return env.DB.prepare(sql).bind(...params);
}
