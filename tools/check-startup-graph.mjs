#!/usr/bin/env node
/**
 * Fails when zod or the OpenAPI generator is reached from src/index.ts through static imports
 * alone. Those modules are evaluated when a new isolate starts (tools/build-worker.mjs splits
 * the Worker at every `import()`), and evaluating zod cost a quarter of the startup CPU; behind
 * an `import()` they load with the first request that needs them. Run by `npm run check`.
 */
import { builtinModules } from "node:module";
import path from "node:path";
import * as esbuild from "esbuild";

if (process.argv.includes("--help") || process.argv.includes("-h")) {
  console.log(`usage: node tools/check-startup-graph.mjs

Lists what src/index.ts imports statically (what a new isolate evaluates) and exits 1, with
the import chain, if zod, @hono/zod-openapi or zod-to-openapi is among it.`);
  process.exit(0);
}

const ROOT = path.resolve(import.meta.dirname, "..");
const ENTRY = "src/index.ts";
const NOT_AT_STARTUP = /^node_modules\/(zod|@hono\/zod-openapi|@hono\/zod-validator|@asteasolutions\/zod-to-openapi)\//;
const NODE_BUILTINS = new Set(builtinModules);

// Resolved as tools/build-worker.mjs resolves them; nothing is written.
const { metafile } = await esbuild.build({
  absWorkingDir: ROOT,
  entryPoints: [ENTRY],
  outdir: "dist/startup-graph",
  write: false,
  metafile: true,
  bundle: true,
  format: "esm",
  platform: "neutral",
  mainFields: ["module", "main"],
  conditions: ["workerd", "worker", "browser"],
  loader: { ".js": "jsx", ".mjs": "jsx", ".cjs": "jsx", ".sql": "text" },
  plugins: [
    {
      name: "runtime-modules",
      setup(build) {
        build.onResolve({ filter: /^(node|cloudflare):/ }, (args) => ({ path: args.path, external: true }));
        build.onResolve({ filter: /^[a-z_/]+$/ }, (args) =>
          NODE_BUILTINS.has(args.path) ? { path: args.path, external: true } : undefined,
        );
      },
    },
  ],
  logLevel: "error",
});

/** Every module reached without an `import()`, with the module that first imported it. */
const importer = new Map([[ENTRY, null]]);
const queue = [ENTRY];
while (queue.length) {
  const file = queue.shift();
  for (const dep of metafile.inputs[file]?.imports ?? []) {
    if (dep.kind === "dynamic-import" || dep.external || importer.has(dep.path)) continue;
    importer.set(dep.path, file);
    queue.push(dep.path);
  }
}

const bytes = [...importer.keys()].reduce((sum, file) => sum + (metafile.inputs[file]?.bytes ?? 0), 0);
const offenders = [...importer.keys()].filter(
  (file) => NOT_AT_STARTUP.test(file) && !NOT_AT_STARTUP.test(importer.get(file)),
);
if (offenders.length) {
  console.error("zod is in the Worker's startup graph; load what needs it with import():");
  for (const file of offenders) {
    const chain = [];
    for (let f = file; f; f = importer.get(f)) chain.push(f);
    console.error(`  ${chain.join(" <- ")}`);
  }
  process.exit(1);
}
console.log(`startup graph: ${importer.size} modules, ${Math.round(bytes / 1024)} KiB of source, no zod`);
