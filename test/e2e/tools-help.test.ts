/**
 * Every CLI in tools/ answers --help with its usage and exit 0, and does nothing else (the
 * bridge's and the connector CLI's are tested beside their other behaviour).
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");

const help = (script: string, flag: string) =>
  spawnSync(process.execPath, [script, flag], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", WRANGLER_SEND_METRICS: "false" },
    encoding: "utf8",
    timeout: 30_000,
  });

describe("tools/*.mjs --help", () => {
  it.each([
    ["tools/start.mjs", /^usage: npm start \[-- <wrangler dev options>\]/],
    ["tools/complete-lockfile.mjs", /^usage: node tools\/complete-lockfile\.mjs/],
    ["tools/docs-assets.mjs", /^usage: node tools\/docs-assets\.mjs/],
    ["tools/audit-verify/cli.mjs", /^usage: npm run audit:verify -- --url/],
  ])("%s answers --help and -h with its usage, exit 0", (script, usage) => {
    const lockfile = readFileSync(path.join(ROOT, "package-lock.json"), "utf8");
    for (const flag of ["--help", "-h"]) {
      const run = help(script, flag);
      expect(run.status).toBe(0);
      expect(run.stdout).toMatch(usage);
      expect(run.stderr).toBe("");
    }
    // complete-lockfile.mjs used to rewrite the lockfile whatever its arguments.
    expect(readFileSync(path.join(ROOT, "package-lock.json"), "utf8")).toBe(lockfile);
  });

  it("npm start -- --help prints the usage without applying migrations or starting wrangler", () => {
    const run = help("tools/start.mjs", "--help");
    expect(run.stdout).not.toMatch(/^D1:/m);
    expect(run.stdout).not.toContain("wrangler 4");
  });
});
