/**
 * The README's walkthroughs as a newcomer runs them: the shell blocks of "Try it" and "Try
 * OAuth" executed verbatim by bash (only the origin is this test's `wrangler dev`), and the
 * browser step of the OAuth walkthrough done in Chromium as the README tells a person to.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { shBlocks } from "./readme";
import { type DevServer, launchChromium, startDevServer } from "./server";

const PORT = Number(process.env.E2E_README_PORT ?? 8797);

let dev: DevServer;
let browser: Browser;
let work: string;

/** Runs README shell text in `work` with bash, against this test's server. */
function bash(script: string) {
  const res = spawnSync("bash", ["-euo", "pipefail", "-c", script.replaceAll("http://localhost:8787", dev.origin)], {
    cwd: work,
    env: { ...process.env },
    encoding: "utf8",
    timeout: 60_000,
  });
  if (res.status !== 0) throw new Error(`bash failed (${res.status}):\n${script}\n${res.stdout}\n${res.stderr}`);
  return res.stdout;
}

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), "readme-walkthrough-"));
  dev = await startDevServer(PORT);
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await dev?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe("the README's walkthroughs, verbatim", () => {
  it("Try it, then Try OAuth: register a client with the PAT, authorize in a browser, exchange with curl, call /v1/api/me", async () => {
    const [tryIt = ""] = shBlocks("## Try it");
    const [register = "", exchange = ""] = shBlocks("### Try OAuth");
    expect(tryIt).toContain("/v1/api/signup");
    expect(exchange).toContain("CODE='svc_code_...'");

    // Steps 1-3 in the shell that ran "Try it" (for $TOKEN); keep the variables for step 4.
    const out = bash(
      `${tryIt}\n${register}\nprintf 'VERIFIER=%q\\nCLIENT_ID=%q\\n' "$VERIFIER" "$CLIENT_ID" > walkthrough.env`,
    );
    // curl's answers end without a newline, so the URL is found in the output, not by line.
    const authorizeUrl = out.match(/http:\/\/localhost:\d+\/v1\/oauth\/authorize\?\S+/)?.[0];
    expect(authorizeUrl?.startsWith(`${dev.origin}/v1/oauth/authorize?`)).toBe(true);

    // The browser step, as the README tells a person: sign in as Ada, Allow, read the address bar.
    const page = await browser.newPage();
    let landed: URL | undefined;
    await page.route("http://127.0.0.1:8976/**", (route) => {
      landed = new URL(route.request().url());
      return route.abort("connectionrefused");
    });
    await page.goto(authorizeUrl!);
    await page.getByLabel("Email").fill("ada@acme.test");
    await page.getByLabel("Password").fill("a long passphrase");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("button", { name: "Allow" }).click();
    await expect.poll(() => landed, { timeout: 15_000 }).toBeDefined();
    expect(landed!.searchParams.get("state")).toBe("xyz");
    const code = landed!.searchParams.get("code");
    expect(code).toMatch(/^svc_code_/);

    // Steps 4-5 with the copied code in place of the placeholder.
    const me = bash(`source walkthrough.env\n${exchange.replace("CODE='svc_code_...'", `CODE='${code}'`)}`);
    const identity = JSON.parse(me.slice(me.lastIndexOf('{"user"'))) as { auth: string; user: { email: string } };
    expect(identity).toMatchObject({ auth: "oauth", user: { email: "ada@acme.test" } });
  });
});
