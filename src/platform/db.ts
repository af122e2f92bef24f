import { fillPlaceholders, getTableColumns, is, SQL, sql } from "drizzle-orm";
import { type DrizzleD1Database, drizzle } from "drizzle-orm/d1";
import type { PreparedQueryConfig, SQLiteInsertValue, SQLitePreparedQuery, SQLiteTable } from "drizzle-orm/sqlite-core";

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

/**
 * `INSERT … SELECT <row> <source>`: the row is written once per row `source` selects
 * (`FROM … WHERE …`, its values may be SQL over those rows), or with a bare `WHERE …` only when
 * that holds in the same statement (a cap or an existence check a concurrent writer cannot
 * slip past). A value left out takes the column's declared default, else NULL.
 */
export function insertSelect<T extends SQLiteTable>(d: Db, table: T, row: SQLiteInsertValue<T>, source: SQL) {
  const values = Object.entries(getTableColumns(table))
    .filter(([, column]) => !column.generated)
    .map(([key, column]) => {
      const value = (row as Record<string, unknown>)[key];
      const given = value === undefined ? (column.default ?? column.defaultFn?.() ?? null) : value;
      return is(given, SQL) ? given : sql.param(given, column);
    });
  // Drizzle's INSERT … SELECT names every column in the table's order, as `values` are here.
  return d.insert(table).select(sql`SELECT ${sql.join(values, sql`, `)} ${source}`);
}

type Prepared = SQLitePreparedQuery<PreparedQueryConfig>;
type Executed<P> = P extends SQLitePreparedQuery<infer C> ? C["execute"] : never;

/**
 * Runs queries prepared once per isolate (see `preparedFor`) as one D1 batch, a transaction,
 * their `sql.placeholder`s bound from `values`: the batch of a hot path, where building its
 * queries on each request would cost more than the rest of the request's own work. Answers
 * each query's result as Drizzle's own batch does.
 */
export async function batchPrepared<const T extends readonly Prepared[]>(
  env: Env,
  queries: T,
  values: Record<string, unknown>,
): Promise<{ [K in keyof T]: Executed<T[K]> }> {
  const results = await env.DB.batch(
    queries.map((q) => {
      const { sql: text, params } = q.getQuery();
      return env.DB.prepare(text).bind(...fillPlaceholders(params, values));
    }),
  );
  return results.map((r, i) => queries[i]?.mapResult(r, true)) as { [K in keyof T]: Executed<T[K]> };
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
