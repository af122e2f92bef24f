import { spawnSync } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

const ROOT = import.meta.dirname;

/**
 * The PDF reader Worker (workers/pdf-reader), bundled by wrangler exactly as it deploys: the
 * tests run it beside the service as the target of its PDF_READER binding.
 */
function bundlePdfReader(): string {
  const outDir = path.join(ROOT, "node_modules", ".cache", "pdf-reader");
  const run = spawnSync(
    process.execPath,
    [
      path.join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js"),
      "deploy",
      "--dry-run",
      "--config",
      path.join(ROOT, "workers", "pdf-reader", "wrangler.toml"),
      "--outdir",
      outDir,
    ],
    { cwd: ROOT, env: { ...process.env, WRANGLER_SEND_METRICS: "false" }, encoding: "utf8" },
  );
  if (run.status !== 0) throw new Error(`bundling the PDF reader failed:\n${run.stdout}\n${run.stderr}`);
  return path.join(outDir, "index.js");
}

export default defineConfig(async () => {
  const migrations = await readD1Migrations(path.join(ROOT, "migrations"));
  return {
    plugins: [
      cloudflareTest({
        wrangler: { configPath: "./wrangler.toml" },
        // The tests run the source; wrangler.toml's main is the split build (tools/build-worker.mjs).
        main: "./src/index.ts",
        miniflare: {
          // Test-only binding so test/setup.ts can apply the D1 migrations.
          bindings: { TEST_MIGRATIONS: migrations },
          workers: [
            {
              name: "workspace-agent-pdf-reader",
              modules: true,
              scriptPath: bundlePdfReader(),
              compatibilityDate: "2026-10-01",
            },
          ],
        },
      }),
    ],
    test: {
      include: ["test/**/*.test.ts", "test/**/*.test.tsx"],
      exclude: ["test/e2e/**"],
      setupFiles: ["./test/setup.ts"],
      testTimeout: 30_000,
      // Vitest's default is one file at a time on a 2-core machine, yet a file spends most of its
      // time waiting on workerd; two or more at once keep both cores busy.
      maxWorkers: Math.max(2, os.availableParallelism()),
      // Vitest empties CSS modules by default; the crawler's fixture stylesheets are read as text.
      css: { include: [/test\/fixtures\/.*\.css/] },
    },
  };
});
