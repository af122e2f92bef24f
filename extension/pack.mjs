// Zips extension/dist (run `npm run extension:build` first) into extension/extension.zip, the
// file the Chrome Web Store takes.
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { zipSync } from "fflate";

const here = import.meta.dirname;
const dist = path.join(here, "dist");
if (!existsSync(path.join(dist, "manifest.json"))) {
  console.error("extension/dist has no manifest.json: run npm run extension:build first");
  process.exit(1);
}
const files = {};
for (const entry of readdirSync(dist, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile()) continue;
  const full = path.join(entry.parentPath, entry.name);
  files[path.relative(dist, full).split(path.sep).join("/")] = readFileSync(full);
}
const out = path.join(here, "extension.zip");
writeFileSync(out, zipSync(files, { level: 9 }));
console.log(`${path.relative(process.cwd(), out)}: ${Object.keys(files).length} files`);
