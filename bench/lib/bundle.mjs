// Step 1: bundle the real Worker exactly as `wrangler deploy` would upload it, and size it.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { gzipSync } from "node:zlib";

export const BUNDLE_BUDGET_BYTES = 1024 * 1024;

/** Module types of the files wrangler writes next to index.js (source maps and README are not uploaded). */
const MODULE_TYPES = {
  ".js": "ESModule",
  ".mjs": "ESModule",
  ".sql": "Text",
  ".txt": "Text",
  ".html": "Text",
  ".bin": "Data",
  ".wasm": "CompiledWasm",
};

export function bundleWorker(root, outDir) {
  rmSync(outDir, { recursive: true, force: true });
  const wrangler = path.join(root, "node_modules", "wrangler", "bin", "wrangler.js");
  const run = spawnSync(process.execPath, [wrangler, "deploy", "--dry-run", "--outdir", outDir], {
    cwd: root,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
    encoding: "utf8",
  });
  if (run.status !== 0) {
    throw new Error(`wrangler deploy --dry-run failed (${run.status}):\n${run.stdout}\n${run.stderr}`);
  }
  // index.js first: Miniflare takes the first module as the entry point.
  const files = readdirSync(outDir)
    .filter((f) => MODULE_TYPES[path.extname(f)])
    .sort((a, b) => (a === "index.js" ? -1 : b === "index.js" ? 1 : a.localeCompare(b)));
  if (files[0] !== "index.js") throw new Error(`no index.js in ${outDir}`);
  const modules = files.map((f) => ({ type: MODULE_TYPES[path.extname(f)], path: path.join(outDir, f) }));
  let rawBytes = 0;
  let gzipBytes = 0;
  for (const m of modules) {
    const bytes = readFileSync(m.path);
    rawBytes += bytes.length;
    gzipBytes += gzipSync(bytes, { level: 9 }).length;
  }
  const reported = /Total Upload: ([\d.]+ KiB) \/ gzip: ([\d.]+ KiB)/.exec(run.stdout);
  return {
    outDir,
    modules,
    rawBytes,
    gzipBytes,
    wranglerReport: reported ? `${reported[1]} / gzip ${reported[2]}` : null,
  };
}

/** The Worker's global-scope CPU at startup (`wrangler check startup`, local workerd). */
export const STARTUP_AIM_MS = 50;

export function profileStartup(root, outfile) {
  const wrangler = path.join(root, "node_modules", "wrangler", "bin", "wrangler.js");
  const run = spawnSync(process.execPath, [wrangler, "check", "startup", "--outfile", outfile], {
    cwd: root,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
    encoding: "utf8",
  });
  const active = /Active: ([\d.]+) ms/.exec(run.stdout);
  if (run.status !== 0 || !active)
    throw new Error(`wrangler check startup failed (${run.status}):\n${run.stdout}\n${run.stderr}`);
  return { activeMs: Number(active[1]), profile: outfile };
}
