import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

export default defineConfig(async () => {
  const migrations = await readD1Migrations(path.join(import.meta.dirname, "migrations"));
  return {
    plugins: [
      cloudflareTest({
        wrangler: { configPath: "./wrangler.toml" },
        miniflare: {
          // Test-only binding so test/setup.ts can apply the D1 migrations.
          bindings: { TEST_MIGRATIONS: migrations },
        },
      }),
    ],
    test: {
      include: ["test/**/*.test.ts", "test/**/*.test.tsx"],
      exclude: ["test/e2e/**"],
      setupFiles: ["./test/setup.ts"],
      testTimeout: 30_000,
      // Vitest empties CSS modules by default; the crawler's fixture stylesheets are read as text.
      css: { include: [/test\/fixtures\/.*\.css/] },
    },
  };
});
