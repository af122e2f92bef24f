/**
 * `npm start` as the README runs it, on another port: PORT is honoured.
 */
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");
const PORT = Number(process.env.E2E_START_PORT ?? 8796);

let child: ChildProcess | undefined;
let log = "";

afterAll(async () => {
  if (!child?.pid || child.exitCode !== null) return;
  const exited = new Promise((resolve) => child!.once("exit", resolve));
  // The whole process group: npm, wrangler and workerd.
  process.kill(-child.pid, "SIGTERM");
  await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
  if (child.exitCode === null) process.kill(-child.pid, "SIGKILL");
});

describe("npm start", () => {
  it("serves on the port PORT names", async () => {
    child = spawn("npm", ["start"], {
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
  }, 150_000);
});
