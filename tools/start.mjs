#!/usr/bin/env node
// `npm start`: applies the D1 migrations to the local database (made on first run, in
// .wrangler/) and says so in one line, then runs `wrangler dev` with the service and the PDF
// reader Worker in one session. wrangler's own migration output (a table per file) is shown
// only when applying fails.
import { spawn, spawnSync } from "node:child_process";
import path from "node:path";
import { pathToFileURL } from "node:url";

const USAGE = `usage: npm start [-- <wrangler dev options>]

Applies the D1 migrations to the local database (.wrangler/), then runs wrangler dev with the
service (wrangler.toml) and the PDF reader Worker (workers/pdf-reader/wrangler.toml) in one
session, on http://localhost:8787 or on the port PORT names.

  PORT=8788 npm start                  another port
  npm start -- --var LLM_MODEL:gpt-4o  extra options are passed to wrangler dev
  npm start -- --persist-to <dir>      local state elsewhere (the migrations go there too)
`;

const ROOT = path.resolve(import.meta.dirname, "..");
const WRANGLER = path.join(ROOT, "node_modules/wrangler/bin/wrangler.js");

/** The one line that sums up `wrangler d1 migrations apply`'s output, or null for output it does not know. */
export function migrationSummary(output) {
  if (/No migrations to apply/.test(output)) return "D1: up to date";
  // The status table, reprinted after each file: a row per applied file, "│ 0007_billing_seed.sql │ ✅ │".
  const applied = [...new Set([...output.matchAll(/^│\s*(\S+)\.sql\s*│\s*✅/gmu)].map((m) => m[1]))];
  if (applied.length === 0) return null;
  const names = applied.length === 1 ? applied[0] : `${applied[0]} … ${applied.at(-1)}`;
  return `D1: applied ${applied.length} migration${applied.length === 1 ? "" : "s"} (${names})`;
}

/** `--persist-to <dir>` or `--persist-to=<dir>` among wrangler dev's options, as arguments for the migrations. */
function persistTo(extra) {
  const i = extra.findIndex((a) => a === "--persist-to" || a.startsWith("--persist-to="));
  if (i < 0) return [];
  return extra[i].includes("=") ? [extra[i]] : extra.slice(i, i + 2);
}

function migrate(extra) {
  const args = [WRANGLER, "d1", "migrations", "apply", "DB", "--local", ...persistTo(extra)];
  const run = spawnSync(process.execPath, args, {
    cwd: ROOT,
    // No terminal: wrangler takes its default answer (yes) to "About to apply N migration(s)".
    stdio: ["ignore", "pipe", "pipe"],
    encoding: "utf8",
  });
  const output = `${run.stdout ?? ""}${run.stderr ?? ""}`;
  const summary = run.status === 0 ? migrationSummary(output) : null;
  if (run.status !== 0 || run.error) {
    process.stderr.write(output);
    console.error(`D1: applying the migrations failed${run.error ? ` (${run.error.message})` : ""}`);
    process.exit(run.status || 1);
  }
  console.log(summary ?? output.trim());
}

function dev(extra) {
  const child = spawn(
    process.execPath,
    [
      WRANGLER,
      "dev",
      "-c",
      "wrangler.toml",
      "-c",
      "workers/pdf-reader/wrangler.toml",
      "--port",
      process.env.PORT || "8787",
      ...extra,
    ],
    { cwd: ROOT, stdio: "inherit" },
  );
  // Ctrl-C reaches wrangler through the terminal's process group; a signal sent to this
  // process alone is passed on. Either way this process leaves when wrangler has.
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
    process.on(signal, () => child.kill(signal));
  }
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const extra = process.argv.slice(2);
  if (extra.includes("--help") || extra.includes("-h")) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  migrate(extra);
  dev(extra);
}
