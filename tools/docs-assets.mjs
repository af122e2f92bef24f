#!/usr/bin/env node
/**
 * Copies the API reference's browser bundle (Scalar's standalone script, from the npm
 * package) into the Worker's static assets, so `/v1/docs` renders without any CDN: offline,
 * on `npm start` and deployed. Wrangler runs this as the `[build]` command before `wrangler
 * dev` and `wrangler deploy`; the copy is not committed (see .gitignore).
 */
import { copyFileSync, mkdirSync, statSync } from "node:fs";
import path from "node:path";

if (process.argv.includes("--help") || process.argv.includes("-h")) {
  console.log(`usage: node tools/docs-assets.mjs

Copies the API reference's script from node_modules/@scalar/api-reference into
public/v1/docs/scalar/ (wrangler runs it before dev and deploy).`);
  process.exit(0);
}

const ROOT = path.resolve(import.meta.dirname, "..");
// The package exports no subpath for its browser build, so it is read from where npm installs it.
const source = path.join(ROOT, "node_modules/@scalar/api-reference/dist/browser/standalone.js");
const target = path.join(ROOT, "public/v1/docs/scalar/standalone.js");

const same = (() => {
  try {
    const [a, b] = [statSync(source), statSync(target)];
    return a.size === b.size && a.mtimeMs <= b.mtimeMs;
  } catch {
    return false;
  }
})();
if (!same) {
  mkdirSync(path.dirname(target), { recursive: true });
  copyFileSync(source, target);
}
