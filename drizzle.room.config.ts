import { defineConfig } from "drizzle-kit";

// The ConversationRoom Durable Object's own SQLite schema, bundled with the Worker as migrations.js.
export default defineConfig({
  dialect: "sqlite",
  driver: "durable-sqlite",
  schema: "./src/conversations/room/schema.ts",
  out: "./src/conversations/room/migrations",
});
