/**
 * `npm start` as the README runs it, on another port and a fresh local state (a fresh clone):
 * PORT is honoured, the local database is made, and the migrations are told in one line.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { migrationSummary } from "../../tools/start.mjs";

const ROOT = path.resolve(import.meta.dirname, "../..");
const PORT = Number(process.env.E2E_START_PORT ?? 8796);
const MIGRATIONS = readdirSync(path.join(ROOT, "migrations"))
  .filter((f) => f.endsWith(".sql"))
  .sort()
  .map((f) => f.replace(/\.sql$/, ""));

let child: ChildProcess | undefined;
let log = "";
const persist = mkdtempSync(path.join(tmpdir(), "svc-start-"));

afterAll(async () => {
  if (child?.pid && child.exitCode === null) {
    const exited = new Promise((resolve) => child!.once("exit", resolve));
    // The whole process group: npm, tools/start.mjs, wrangler and workerd.
    process.kill(-child.pid, "SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (child.exitCode === null) process.kill(-child.pid, "SIGKILL");
  }
  rmSync(persist, { recursive: true, force: true });
});

describe("npm start", () => {
  it("makes the local database, says so in one line, and serves on the port PORT names", async () => {
    child = spawn("npm", ["start", "--", "--persist-to", persist], {
      cwd: ROOT,
      env: { ...process.env, PORT: String(PORT), WRANGLER_SEND_METRICS: "false", CI: "1" },
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout?.on("data", (d) => (log += d));
    child.stderr?.on("data", (d) => (log += d));
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`npm start exited early:\n${log}`);
      try {
        const res = await fetch(`http://127.0.0.1:${PORT}/v1/health`);
        if (res.ok) {
          expect(await res.json()).toEqual({ ok: true });
          break;
        }
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`npm start did not answer on ${PORT}:\n${log}`);
      await new Promise((r) => setTimeout(r, 500));
    }

    const d1Lines = log.split("\n").filter((line) => line.startsWith("D1:"));
    expect(d1Lines).toEqual([`D1: applied ${MIGRATIONS.length} migrations (${MIGRATIONS[0]} … ${MIGRATIONS.at(-1)})`]);
    // wrangler's migration tables stay out of sight when applying succeeds.
    expect(log).not.toContain("Migrations to be applied");
    expect(log).not.toContain("commands executed successfully");
    expect(log).not.toMatch(/│ \d{4}_\S+\.sql/);
    // types/worker-configuration.d.ts is where `wrangler dev` does not compare it with one Worker's config.
    expect(log).not.toContain("Your types might be out of date");
  }, 150_000);
});

describe("tools/start.mjs: the migrations' one line", () => {
  it("sums up wrangler's output: nothing to apply, one file, several files (each once, however often its table is printed)", () => {
    expect(migrationSummary("⛅️ wrangler 4\n✅ No migrations to apply!\n")).toBe("D1: up to date");
    const table = (rows: string[]) =>
      `┌──┬──┐\n│ name │ status │\n${rows.map((r) => `├──┼──┤\n│ ${r}.sql │ ✅ │`).join("\n")}\n└──┴──┘\n`;
    expect(migrationSummary(table(["0015_x"]))).toBe("D1: applied 1 migration (0015_x)");
    const twice = table(["0015_x"]) + table(["0015_x", "0016_y"]) + table(["0015_x", "0016_y", "0017_z"]);
    expect(migrationSummary(twice)).toBe("D1: applied 3 migrations (0015_x … 0017_z)");
    expect(migrationSummary("something else")).toBeNull();
  });
});
