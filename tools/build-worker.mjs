#!/usr/bin/env node
/**
 * Bundles the Worker into dist/worker/ with esbuild's code splitting: the entry module holds
 * what the isolate evaluates when it starts, and every module the code reaches only through
 * `import()` (each area's routes, tools, consumers, the AI and MCP SDKs, PDF and mail parsing)
 * goes to chunks of its own. workerd compiles a module when it is first imported, so the
 * chunks cost nothing at startup; wrangler's own bundle is one file, compiled whole before the
 * global scope runs. Wrangler runs this as part of the `[build]` command and uploads the
 * directory as is (`no_bundle`). The options follow wrangler's bundler (target, conditions,
 * `process.env.NODE_ENV`, kept names, minified, external source maps).
 */
import { readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import path from "node:path";
import * as esbuild from "esbuild";

if (process.argv.includes("--help") || process.argv.includes("-h")) {
  console.log(`usage: node tools/build-worker.mjs

Bundles src/index.ts into dist/worker/ (index.js and its chunks), split at every import()
(wrangler runs it before dev, deploy and check startup).`);
  process.exit(0);
}

const ROOT = path.resolve(import.meta.dirname, "..");
const OUT = path.join(ROOT, "dist", "worker");
const NODE_BUILTINS = new Set(builtinModules);

/** Node's modules and the runtime's own (`cloudflare:*`) are provided by workerd (nodejs_compat). */
const runtimeModules = {
  name: "runtime-modules",
  setup(build) {
    build.onResolve({ filter: /^(node|cloudflare):/ }, (args) => ({ path: args.path, external: true }));
    build.onResolve({ filter: /^[a-z_/]+$/ }, (args) =>
      NODE_BUILTINS.has(args.path) ? { path: `node:${args.path}`, external: true } : undefined,
    );
  },
};

const production = process.env.NODE_ENV ?? "production";
rmSync(OUT, { recursive: true, force: true });
await esbuild.build({
  absWorkingDir: ROOT,
  entryPoints: { index: "src/index.ts" },
  outdir: OUT,
  // A name no package in node_modules uses: wrangler.toml's module rule for the chunks also
  // applies to the modules the tests load, and must not claim a dependency's .mjs files.
  chunkNames: "worker-chunk-[hash]",
  // .mjs: wrangler.toml's module rule uploads them as ES modules beside the entry.
  outExtension: { ".js": ".mjs" },
  bundle: true,
  splitting: true,
  format: "esm",
  target: "es2024",
  supported: { "import-source": true, using: true },
  conditions: ["workerd", "worker", "browser"],
  define: {
    "process.env.NODE_ENV": JSON.stringify(production),
    "global.process.env.NODE_ENV": JSON.stringify(production),
    "globalThis.process.env.NODE_ENV": JSON.stringify(production),
    "navigator.userAgent": '"Cloudflare-Workers"',
  },
  loader: { ".js": "jsx", ".mjs": "jsx", ".cjs": "jsx", ".sql": "text" },
  keepNames: true,
  minify: true,
  sourcemap: "linked",
  plugins: [runtimeModules],
  logLevel: "warning",
});
// The entry keeps the name wrangler.toml's main gives it; no chunk imports it.
const entry = readFileSync(path.join(OUT, "index.mjs"), "utf8");
writeFileSync(path.join(OUT, "index.js"), entry.replace(/index\.mjs\.map\s*$/, "index.js.map\n"));
rmSync(path.join(OUT, "index.mjs"));
renameSync(path.join(OUT, "index.mjs.map"), path.join(OUT, "index.js.map"));
