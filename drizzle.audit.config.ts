import { defineConfig } from "drizzle-kit";

// The AuditLog Durable Object's own SQLite schema, bundled with the Worker as migrations.js.
export default defineConfig({
  dialect: "sqlite",
  driver: "durable-sqlite",
  schema: "./durable-objects/audit-log/schema.ts",
  out: "./durable-objects/audit-log/migrations",
});
