// The npm registry reachable from this workplace lacks some platform builds of workerd and
// Biome (macOS, Windows, Android, musl), so `npm install` leaves them out of package-lock.json and `npm ci`
// then refuses the lockfile as out of sync. This adds the missing optional platform
// entries (with their os/cpu, so npm never fetches them on Linux). Run after `npm install`:
//   node tools/complete-lockfile.mjs
import { readFileSync, writeFileSync } from "node:fs";

if (process.argv.includes("--help") || process.argv.includes("-h")) {
  console.log(`usage: node tools/complete-lockfile.mjs

Adds to package-lock.json the optional platform builds of workerd and Biome that the npm
registry of this workplace lacks, so that \`npm ci\` accepts the lockfile. Run after \`npm install\`.`);
  process.exit(0);
}

const BIOME = "MIT OR Apache-2.0";
const PLATFORMS = {
  "@cloudflare/workerd-darwin-64": { os: ["darwin"], cpu: ["x64"] },
  "@cloudflare/workerd-darwin-arm64": { os: ["darwin"], cpu: ["arm64"] },
  "@cloudflare/workerd-linux-64": { os: ["linux"], cpu: ["x64"] },
  "@cloudflare/workerd-linux-arm64": { os: ["linux"], cpu: ["arm64"] },
  "@cloudflare/workerd-windows-64": { os: ["win32"], cpu: ["x64"] },
  "@biomejs/cli-android-arm64": { os: ["android"], cpu: ["arm64"], license: BIOME },
  "@biomejs/cli-android-x64": { os: ["android"], cpu: ["x64"], license: BIOME },
  "@biomejs/cli-darwin-arm64": { os: ["darwin"], cpu: ["arm64"], license: BIOME },
  "@biomejs/cli-darwin-x64": { os: ["darwin"], cpu: ["x64"], license: BIOME },
  "@biomejs/cli-linux-arm64": { os: ["linux"], cpu: ["arm64"], libc: ["glibc"], license: BIOME },
  "@biomejs/cli-linux-arm64-musl": { os: ["linux"], cpu: ["arm64"], libc: ["musl"], license: BIOME },
  "@biomejs/cli-linux-x64": { os: ["linux"], cpu: ["x64"], libc: ["glibc"], license: BIOME },
  "@biomejs/cli-linux-x64-musl": { os: ["linux"], cpu: ["x64"], libc: ["musl"], license: BIOME },
  "@biomejs/cli-win32-arm64": { os: ["win32"], cpu: ["arm64"], license: BIOME },
  "@biomejs/cli-win32-x64": { os: ["win32"], cpu: ["x64"], license: BIOME },
};

const path = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(readFileSync(path, "utf8"));
const pkgs = lock.packages;

/** Where Node would resolve `name` from the package at `from` (walking up node_modules). */
function resolves(from, name) {
  let dir = from;
  for (;;) {
    if (pkgs[`${dir ? `${dir}/` : ""}node_modules/${name}`]) return true;
    if (!dir) return false;
    const i = dir.lastIndexOf("/node_modules/");
    dir = i === -1 ? "" : dir.slice(0, i);
  }
}

let added = 0;
for (const [at, entry] of Object.entries(pkgs)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const platform = PLATFORMS[name];
    if (!platform || resolves(at, name)) continue;
    pkgs[`${at ? `${at}/` : ""}node_modules/${name}`] = {
      version,
      dev: entry.dev,
      optional: true,
      license: "Apache-2.0",
      ...platform,
      engines: { node: ">=16" },
    };
    added += 1;
  }
}
lock.packages = Object.fromEntries(
  Object.entries(pkgs).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : a > b ? 1 : 0)),
);
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`complete-lockfile: added ${added} platform entr${added === 1 ? "y" : "ies"}`);
