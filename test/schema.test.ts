import { env } from "cloudflare:workers";
import { getTableName, is } from "drizzle-orm";
import { getTableConfig, SQLiteTable } from "drizzle-orm/sqlite-core";
import { describe, expect, it } from "vitest";
import * as schema from "../src/db/schema";

// src/db/schema.ts re-exports each area's tables.ts; a tables file left out of it, or a table
// changed without its migration, shows here as a difference from the migrated D1.
const tables = Object.values(schema).filter((value) => is(value, SQLiteTable));

const rows = async <T>(query: string, ...binds: unknown[]) =>
  (
    await env.DB.prepare(query)
      .bind(...binds)
      .all<T>()
  ).results;

describe("src/db/schema: the areas' tables, as the migrations build them", () => {
  it("exports one Drizzle table for every table the migrations create, and no other", async () => {
    const created = await rows<{ name: string }>(
      `SELECT name FROM sqlite_master WHERE type = 'table'
       AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name <> 'd1_migrations'`,
    );
    expect(tables.map((table) => getTableName(table)).sort()).toEqual(created.map((t) => t.name).sort());
  });

  it("declares each table's columns and indexes as D1 has them", async () => {
    for (const table of tables) {
      const config = getTableConfig(table);
      const columns = await rows<{ name: string }>("SELECT name FROM pragma_table_info(?)", config.name);
      expect(config.columns.map((c) => c.name).sort(), config.name).toEqual(columns.map((c) => c.name).sort());
      const indexes = await rows<{ name: string }>(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND name NOT LIKE 'sqlite_autoindex_%'",
        config.name,
      );
      const declared = [
        ...config.indexes.map((i) => i.config.name),
        ...config.columns.filter((c) => c.isUnique).map((c) => c.uniqueName ?? `${config.name}_${c.name}_unique`),
      ];
      expect(declared.sort(), config.name).toEqual(indexes.map((i) => i.name).sort());
    }
  });
});
