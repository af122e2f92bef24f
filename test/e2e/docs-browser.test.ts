/**
 * The API reference at /v1/docs renders its operations in Chromium (Debian's
 * /usr/bin/chromium, driven by playwright-core) against `wrangler dev` with every request
 * off the local origin refused: the page needs no CDN, so it works offline.
 */
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, launchChromium, startDevServer } from "./server";

const PORT = Number(process.env.E2E_DOCS_PORT ?? 8793);

let dev: DevServer;
let browser: Browser;

beforeAll(async () => {
  dev = await startDevServer(PORT);
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await dev?.stop();
});

describe("GET /v1/docs in a real browser, offline", () => {
  it("renders the operations from the Worker's own script, asking nothing of any other host", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const local = new URL(dev.origin).host;
    const elsewhere: string[] = [];
    // Offline: anything not served by this Worker fails, as it would without internet.
    await page.route("**/*", (route) => {
      const url = new URL(route.request().url());
      if (url.host === local || url.protocol === "data:" || url.protocol === "blob:") return route.continue();
      elsewhere.push(url.href);
      return route.abort("internetdisconnected");
    });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(String(e)));

    const res = await page.goto(`${dev.origin}/v1/docs`);
    expect(res?.status()).toBe(200);
    const visible = (text: string) =>
      page.getByText(text, { exact: true }).first().waitFor({ state: "visible", timeout: 30_000 });
    await visible("Workspace Agent Service API");
    // The operations: a tag's paths are listed, and opening a tag in the sidebar shows its
    // operations by their summaries.
    await visible("Liveness");
    await page.getByText("Audit", { exact: true }).first().click();
    await visible("List audit events, newest first");
    await visible("Verify the hash chain of the most recent entries");
    expect(elsewhere).toEqual([]);
    expect(errors).toEqual([]);
    await context.close();
  });

  it("serves the reference's script from the Worker's static assets", async () => {
    const res = await fetch(`${dev.origin}/v1/docs/scalar/standalone.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get("Content-Type")).toMatch(/javascript/);
    expect((await res.text()).length).toBeGreaterThan(100_000);
  });
});
