import { sql } from "drizzle-orm";

/**
 * A LIMIT written into the statement's text, for Drizzle's `.limit()` (which binds a number as a
 * parameter). SQLite plans with the value of a bound LIMIT, so it prepares such a statement again
 * every time it runs, as if its schema had changed: for a statement with subqueries that costs
 * more than running it, in every Durable Object's SQLite and in D1. Written into the text, the
 * statement is prepared once and reused. Only whole numbers reach the text.
 */
export function literalLimit(n: number): number {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`A LIMIT is a whole number of 0 or more, not ${n}`);
  // Drizzle renders any SQL given as the limit; its type names only numbers and placeholders.
  return sql.raw(String(n)) as unknown as number;
}
