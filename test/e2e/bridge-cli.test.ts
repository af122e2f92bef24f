/**
 * The reference bridge takes its token from SVC_PAT or --token-file, never from an argument
 * that npm echoes and shells keep: `--token` is refused without repeating the token.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { bridgeToken } from "../../tools/browser-bridge/bridge.mjs";

const ROOT = path.resolve(import.meta.dirname, "../..");
const SECRET = `svc_pat_${"S".repeat(43)}`;

function runBridge(args: string[], env: Record<string, string> = {}) {
  const res = spawnSync(process.execPath, ["tools/browser-bridge/bridge.mjs", ...args], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", ...env },
    encoding: "utf8",
    timeout: 30_000,
  });
  return { status: res.status, output: `${res.stdout}${res.stderr}` };
}

describe("npm run bridge: where the token comes from", () => {
  it("refuses --token, and never repeats the token it was given", () => {
    const { status, output } = runBridge(["--url", "http://127.0.0.1:9", "--token", SECRET]);
    expect(status).toBe(2);
    expect(output).toContain("--token is not accepted");
    expect(output).toContain("SVC_PAT");
    expect(output).not.toContain(SECRET);
  });

  it("takes the token from SVC_PAT or from --token-file (the file first)", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "bridge-token-"));
    try {
      const file = path.join(dir, "pat");
      writeFileSync(file, `${SECRET}\n`);
      expect(bridgeToken({ "token-file": file }, {})).toEqual({ token: SECRET });
      expect(bridgeToken({}, { SVC_PAT: SECRET })).toEqual({ token: SECRET });
      expect(bridgeToken({ "token-file": file }, { SVC_PAT: "svc_pat_other" })).toEqual({ token: SECRET });
      expect(bridgeToken({}, {}).error).toMatch(/SVC_PAT/);
      expect(bridgeToken({ "token-file": path.join(dir, "missing") }, {}).error).toMatch(/ENOENT/);
      const notPat = bridgeToken({}, { SVC_PAT: "svc_at_oauth" });
      expect(notPat.error).toMatch(/personal access token/);
      expect(notPat.error).not.toContain("svc_at_oauth");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("exits with the usage when no token is set, before starting any browser", () => {
    const { status, output } = runBridge(["--url", "http://127.0.0.1:9"]);
    expect(status).toBe(2);
    expect(output).toMatch(/usage: SVC_PAT=svc_pat_\.\.\. npm run bridge/);
  });
});

describe("npm run bridge: --help", () => {
  it("answers --help and -h with the usage on stdout, exit 0, before looking for a token", () => {
    for (const flag of ["--help", "-h"]) {
      const res = spawnSync(process.execPath, ["tools/browser-bridge/bridge.mjs", flag], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? "" },
        encoding: "utf8",
        timeout: 30_000,
      });
      expect(res.status).toBe(0);
      expect(res.stdout).toMatch(/^usage: SVC_PAT=svc_pat_\.\.\. npm run bridge/);
      expect(res.stdout).toContain("--token-file");
      expect(res.stderr).toBe("");
    }
  });

  it("refuses an unknown option or a stray argument with the usage (exit 2), never repeating the argument", () => {
    for (const args of [["--bogus"], [SECRET]]) {
      const { status, output } = runBridge(args, { SVC_PAT: SECRET });
      expect(status).toBe(2);
      expect(output).toContain("usage: SVC_PAT=");
      expect(output).not.toContain(SECRET);
    }
  });
});
