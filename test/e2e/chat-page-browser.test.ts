/**
 * examples/chat in Chromium, served from an origin of its own (so the service must allow it in
 * CORS_ORIGINS), against `wrangler dev` with a slow fake model: the PAT is pasted and kept in
 * memory only, a reload mid-answer resumes the same turn, the tool call is drawn from the
 * message's parts, and Stop ends the server's turn.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FACT, SLOW, startChatDev } from "./chat-model";
import { apiJson, type DevServer, launchChromium, signupToken } from "./server";

const ROOT = path.resolve(import.meta.dirname, "../..");
const DIST = path.join(ROOT, "examples/chat/dist");
const PORT = Number(process.env.E2E_CHAT_PAGE_PORT ?? 8812);
const PAGE_PORT = Number(process.env.E2E_CHAT_PAGE_ORIGIN_PORT ?? 5174);
const PAGE_ORIGIN = `http://localhost:${PAGE_PORT}`;

let dev: DevServer;
let model: Server;
let site: Server;
let browser: Browser;
let token: string;

/** The built page, as any static server serves it. */
function staticSite(): Promise<Server> {
  const types: Record<string, string> = { ".html": "text/html", ".js": "text/javascript" };
  const server = createServer((req, res) => {
    const file = new URL(req.url ?? "/", PAGE_ORIGIN).pathname === "/app.js" ? "app.js" : "index.html";
    res.writeHead(200, { "Content-Type": `${types[path.extname(file)]}; charset=utf-8` });
    res.end(readFileSync(path.join(DIST, file)));
  });
  return new Promise((resolve) => server.listen(PAGE_PORT, "127.0.0.1", () => resolve(server)));
}

const api = <T>(path: string, json?: unknown) => apiJson<T>(dev.origin, token, path, json);
type Conversation = { messages: { role: string; content: string; stopped: boolean }[] };

/** Pastes the service URL and the PAT, as a user does after every load. */
async function connect(page: Page) {
  await page.fill("#service", dev.origin);
  await page.fill("#token", token);
  await page.click("#connect");
  await page.waitForSelector("#input");
}
const reply = (page: Page) => page.locator('[data-role="assistant"]').last();
const ask = async (page: Page, text: string) => {
  await page.fill("#input", text);
  await page.click("#send");
};

beforeAll(async () => {
  const build = spawnSync("npm", ["run", "example:chat"], { cwd: ROOT, encoding: "utf8" });
  if (build.status !== 0) throw new Error(`example build failed:\n${build.stdout}\n${build.stderr}`);
  site = await staticSite();
  ({ dev, model } = await startChatDev(PORT, "chat-page-e2e", PAGE_ORIGIN));
  browser = await launchChromium();
  token = await signupToken(dev.origin, "Chat Page E2E");
});

afterAll(async () => {
  await browser?.close();
  await dev?.stop();
  await new Promise((resolve) => model?.close(resolve));
  await new Promise((resolve) => site?.close(resolve));
});

describe("examples/chat in a browser, on its own origin", () => {
  it("resumes an answer after a reload mid-turn and rebuilds the tool call from the message's parts", async () => {
    const page = await browser.newPage();
    await page.goto(`${PAGE_ORIGIN}/`);
    await connect(page);
    const chatId = new URL(page.url()).hash.slice(1);
    expect(chatId).not.toBe("");
    await ask(page, "Please remember that I like rivers");
    await page.locator('[data-role="assistant"] [data-tool="remember"]').waitFor();
    await expect.poll(() => reply(page).textContent(), { timeout: 10_000 }).toContain("word3 ");

    // Reloaded mid-answer: the token is gone (memory only), the chat id stays in the hash.
    await page.reload();
    expect(new URL(page.url()).hash.slice(1)).toBe(chatId);
    expect(await page.inputValue("#token")).toBe("");
    expect(await page.evaluate(() => JSON.stringify({ ...localStorage, ...sessionStorage }))).not.toContain(token);
    await connect(page);
    // "What `useChat({ resume: true })` calls when a page loads: the running turn's UI message stream"
    await expect.poll(() => reply(page).textContent(), { timeout: 15_000 }).toContain(SLOW);
    expect((await reply(page).textContent())!.split("word1 ").length).toBe(2);
    expect(await reply(page).locator('[data-tool="remember"]').textContent()).toContain(FACT);

    // Once more after the turn: the messages are seeded from the conversation's parts.
    await page.reload();
    await connect(page);
    await expect.poll(() => reply(page).textContent()).toContain(SLOW);
    expect(await reply(page).locator('[data-tool="remember"]').textContent()).toContain(FACT);
    expect(await page.locator('[data-role="user"]').allTextContents()).toEqual([
      "userPlease remember that I like rivers",
    ]);
    await page.close();
  });

  it("Stop ends the turn on the server, not only the page's stream", async () => {
    const page = await browser.newPage();
    await page.goto(`${PAGE_ORIGIN}/`);
    await connect(page);
    const chatId = new URL(page.url()).hash.slice(1);
    await ask(page, "Answer slowly");
    await expect.poll(() => reply(page).textContent(), { timeout: 10_000 }).toContain("word2 ");
    await page.click("#stop");
    // "The partial reply is kept with `stopped: true`"
    await expect
      .poll(async () => (await api<Conversation>(`/v1/api/conversations/${chatId}`)).messages.at(-1), {
        timeout: 10_000,
      })
      .toMatchObject({ role: "assistant", stopped: true });
    const { messages } = await api<Conversation>(`/v1/api/conversations/${chatId}`);
    expect(messages.at(-1)!.content.length).toBeLessThan(SLOW.length);
    await page.close();
  });
});
