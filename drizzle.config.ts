import { defineConfig } from "drizzle-kit";

// drizzle-kit writes SQL migrations into the folder `wrangler d1 migrations apply` reads.
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/db/schema.ts",
  out: "./migrations",
});
