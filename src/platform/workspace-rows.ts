import { and, eq, type SQL } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import { db } from "./db";

type WorkspaceTable = SQLiteTable & { workspaceId: SQLiteColumn };
type WorkspaceIdTable = WorkspaceTable & { id: SQLiteColumn };

/** The scope rule for one row: row `id` of `table`, and only if it is the workspace's. */
export const workspaceRowWhere = (table: WorkspaceIdTable, workspaceId: string, id: string) =>
  and(eq(table.id, id), eq(table.workspaceId, workspaceId));

/** Every row of `table` that belongs to the workspace, in `order`. */
export function workspaceRows<T extends WorkspaceTable>(
  env: Env,
  table: T,
  workspaceId: string,
  order: SQL | SQLiteColumn,
): Promise<T["$inferSelect"][]> {
  const query = db(env)
    .select()
    .from(table as WorkspaceTable);
  return query.where(eq(table.workspaceId, workspaceId)).orderBy(order).all() as Promise<T["$inferSelect"][]>;
}

/** The row `id` of `table` if it is the workspace's (another workspace's row is not found). */
export function workspaceRow<T extends WorkspaceIdTable>(
  env: Env,
  table: T,
  workspaceId: string,
  id: string,
): Promise<T["$inferSelect"] | undefined> {
  const query = db(env)
    .select()
    .from(table as WorkspaceIdTable);
  return query.where(workspaceRowWhere(table, workspaceId, id)).get() as Promise<T["$inferSelect"] | undefined>;
}
