import { defineConfig } from "vitest/config";

// Browser tests: plain Node (not workerd), one file at a time, against `wrangler dev`.
export default defineConfig({
  test: {
    include: ["test/e2e/**/*.test.ts"],
    environment: "node",
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 180_000,
  },
});
