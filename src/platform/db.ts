import { AsyncLocalStorage } from "node:async_hooks";
import { fillPlaceholders, getTableColumns, is, SQL, sql } from "drizzle-orm";
import { type DrizzleD1Database, drizzle } from "drizzle-orm/d1";
import type { PreparedQueryConfig, SQLiteInsertValue, SQLitePreparedQuery, SQLiteTable } from "drizzle-orm/sqlite-core";

export type Db = DrizzleD1Database;

/** The shape of the bookmarks D1 hands out (`getBookmark()`): four hex groups, 8-8-8-32. */
const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;

/**
 * The D1 session of one request (read replication through the Sessions API): opened on the
 * request's first query, at the client's bookmark when it sent one (it then reads at least
 * that fresh), else `first-unconstrained` (the nearest replica). Writes go to the primary and
 * move the session's bookmark past them. A value that is not a bookmark is ignored.
 */
export class RequestSession {
  readonly #from: string | null;
  #root: D1Database | null = null;
  #session: D1DatabaseSession | null = null;

  constructor(bookmark: string | null | undefined) {
    this.#from = bookmark && BOOKMARK.test(bookmark) ? bookmark : null;
  }

  /** Runs `work` with every D1 statement it makes on this session. */
  run<T>(work: () => T): T {
    return sessions.run(this, work);
  }

  /** The bookmark of the session's latest query; null while the request has made none. */
  bookmark(): string | null {
    return this.#session?.getBookmark() ?? null;
  }

  /** Where a statement on `root` runs: the session (opened on first use), or the primary for another database. */
  target(root: D1Database): D1Database | D1DatabaseSession {
    if (this.#root === root) return this.#session!;
    if (this.#root) return root;
    this.#root = root;
    this.#session = root.withSession(this.#from ?? "first-unconstrained");
    return this.#session;
  }
}

const sessions = new AsyncLocalStorage<RequestSession>();

/**
 * Where a statement runs when it runs: the request's session inside `RequestSession.run`;
 * outside any request (Durable Objects, queue batches, cron runs, mail) on the primary.
 */
const targetOf = (root: D1Database): D1Database | D1DatabaseSession => sessions.getStore()?.target(root) ?? root;

/**
 * A statement prepared once (its text) and bound on the D1 of the moment it runs: what lets
 * Drizzle instances and prepared queries live per isolate while each request reads through its
 * own session.
 */
class RoutedStatement {
  constructor(
    private readonly root: D1Database,
    private readonly query: string,
  ) {}
  private on() {
    return targetOf(this.root).prepare(this.query);
  }
  bind(...values: unknown[]) {
    return this.on().bind(...values);
  }
  first(column?: string) {
    return column === undefined ? this.on().first() : this.on().first(column);
  }
  run() {
    return this.on().run();
  }
  all() {
    return this.on().all();
  }
  raw(options?: { columnNames?: boolean }) {
    return options?.columnNames ? this.on().raw({ columnNames: true }) : this.on().raw();
  }
}

/**
 * The D1 binding as the code sees it: every statement and batch runs on `targetOf` its moment.
 * Drizzle's D1 driver calls nothing else.
 */
function routed(root: D1Database): D1Database {
  const routedDb: Pick<D1Database, "prepare" | "batch"> = {
    prepare: (query) => new RoutedStatement(root, query) as unknown as D1PreparedStatement,
    batch: (statements) => targetOf(root).batch(statements),
  };
  return routedDb as D1Database;
}

// One Drizzle instance per D1 binding object; safe to lose.
const cache = new WeakMap<D1Database, Db>();

export function db(env: Env): Db {
  let d = cache.get(env.DB);
  if (!d) {
    d = drizzle(routed(env.DB));
    cache.set(env.DB, d);
  }
  return d;
}

/**
 * Memoizes prepared statements per D1 binding: building a Drizzle query costs far more
 * than running a prepared one, so hot paths prepare once per isolate (each run still goes
 * through the request's session, see `RoutedStatement`).
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

export type Prepared = SQLitePreparedQuery<PreparedQueryConfig>;
type Executed<P> = P extends SQLitePreparedQuery<infer C> ? C["execute"] : never;

/**
 * Runs queries prepared once per isolate (see `preparedFor`) as one D1 batch, a transaction,
 * their `sql.placeholder`s bound from `values` (one set for them all, or one per query): the
 * batch of a hot path, where building its queries on each request would cost more than the
 * rest of the request's own work. Answers each query's result as Drizzle's own batch does.
 */
export async function batchPrepared<const T extends readonly Prepared[]>(
  env: Env,
  queries: T,
  values: Record<string, unknown> | readonly Record<string, unknown>[],
): Promise<{ [K in keyof T]: Executed<T[K]> }> {
  const d1 = targetOf(env.DB);
  const results = await d1.batch(
    queries.map((q, i) => {
      const { sql: text, params } = q.getQuery();
      return d1.prepare(text).bind(...fillPlaceholders(params, Array.isArray(values) ? values[i]! : values));
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
