/**
 * tools/audit-verify against `wrangler dev`, as the README's "Verify the audit log yourself"
 * runs it: its shell block verbatim (only the origin is this test's server, and `npm run
 * audit:verify --` is the script it names, run from a scratch folder).
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { shBlocks } from "./readme";
import { type DevServer, startDevServer } from "./server";

const ROOT = path.resolve(import.meta.dirname, "../..");
const PORT = Number(process.env.E2E_AUDIT_VERIFY_PORT ?? 8798);
const CLI = path.join(ROOT, "tools/audit-verify/cli.mjs");

let dev: DevServer;
let work: string;

function bash(script: string, token: string) {
  return spawnSync(
    "bash",
    [
      "-euo",
      "pipefail",
      "-c",
      script.replaceAll("http://localhost:8787", dev.origin).replaceAll("npm run audit:verify --", `node ${CLI}`),
    ],
    { cwd: work, env: { ...process.env, TOKEN: token }, encoding: "utf8", timeout: 120_000 },
  );
}

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), "audit-verify-"));
  dev = await startDevServer(PORT);
}, 150_000);

afterAll(async () => {
  await dev?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe("tools/audit-verify against wrangler dev", () => {
  it("the README's block verifies a fresh workspace's log, saves its checkpoint, and a later run checks the log extends it", async () => {
    const signup = await fetch(`${dev.origin}/v1/api/signup`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({
        workspace_name: "Audit Co",
        email: `a-${Date.now()}@example.com`,
        password: "a long passphrase",
      }),
    });
    expect(signup.status).toBe(201);
    const { token } = (await signup.json()) as { token: string };
    const run = bash(shBlocks("## Verify the audit log yourself")[0]!, token);
    expect(run.stderr).not.toMatch(/FAIL/);
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/audit log verified: localhost:\d+\/audit\/\S+, \d+ events/);
    expect(readFileSync(path.join(work, "checkpoint.txt"), "utf8")).toMatch(
      /^localhost:\d+\/audit\/\S+\n\d+\n\S+\n\n— /,
    );

    // A saved checkpoint the log key did not sign: exit 1, the finding on stderr.
    const saved = readFileSync(path.join(work, "checkpoint.txt"), "utf8");
    writeFileSync(
      path.join(work, "forged.txt"),
      saved.replace(/\n(\d+)\n/, (_m, n: string) => `\n${Number(n) + 1}\n`),
    );
    const forged = spawnSync(process.execPath, [CLI, "--url", dev.origin, "--saved", "forged.txt", "--quiet"], {
      cwd: work,
      env: { ...process.env, AUDIT_VERIFY_TOKEN: token },
      encoding: "utf8",
    });
    expect(forged.status).toBe(1);
    expect(forged.stderr).toMatch(/^FAIL saved checkpoint: no valid signature by the log key localhost:\d+\/audit$/m);
  });
});
