import { eq, type SQL } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import { db } from "./db";

type WorkspaceTable = SQLiteTable & { workspaceId: SQLiteColumn };

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
