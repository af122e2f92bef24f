/**
 * An app an agent publishes, as a visitor's browser sees it: Chromium against `wrangler dev`,
 * the agent's turn driven by a fake OpenAI-compatible model that calls `publish_app`. The
 * page's script runs, but in the sandbox's opaque origin it cannot read the cookies of the
 * origin that serves it.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DevServer, launchChromium, readBody, startDevServer } from "./server";

const PORT = Number(process.env.E2E_APPS_PORT ?? 8793);
const PASSWORD = "correct horse battery";

const INDEX = `<!doctype html><html><head><meta charset="utf-8"><title>Sandboxed app</title></head>
<body><p id="out">not run</p><script src="app.js"></script></body></html>`;
const SCRIPT = `let seen;
try { seen = "cookie:" + document.cookie; } catch (e) { seen = "blocked:" + e.name; }
document.getElementById("out").textContent = "ran|" + seen + "|" + String(self.origin);`;

let dev: DevServer;
let browser: Browser;
let model: Server;
let token: string;

/** Calls publish_app on the first step, then answers in words; streams when asked to. */
function fakeModel(): Promise<{ server: Server; baseUrl: string }> {
  const server = createServer(async (req, res) => {
    const body = JSON.parse(await readBody(req)) as { model: string; stream?: boolean; messages: { role: string }[] };
    const published = body.messages.some((m) => m.role === "tool");
    const args = {
      title: "Cookie Probe",
      visibility: "public",
      files: [
        { path: "index.html", content: INDEX },
        { path: "app.js", content: SCRIPT },
      ],
    };
    const delta = published
      ? { role: "assistant", content: "Your app is published." }
      : {
          role: "assistant",
          tool_calls: [
            {
              index: 0,
              id: "call_publish",
              type: "function",
              function: { name: "publish_app", arguments: JSON.stringify(args) },
            },
          ],
        };
    const finish = published ? "stop" : "tool_calls";
    const usage = { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 };
    const base = { id: "chatcmpl-e2e", created: Math.floor(Date.now() / 1000), model: body.model };
    if (body.stream) {
      res.writeHead(200, { "Content-Type": "text/event-stream" });
      res.write(
        `data: ${JSON.stringify({ ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`,
      );
      res.write(
        `data: ${JSON.stringify({ ...base, object: "chat.completion.chunk", choices: [{ index: 0, delta: {}, finish_reason: finish }], usage })}\n\n`,
      );
      res.end("data: [DONE]\n\n");
      return;
    }
    const { index: _i, ...call } = (delta.tool_calls?.[0] ?? {}) as Record<string, unknown>;
    const message = published ? delta : { role: "assistant", content: null, tool_calls: [call] };
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(
      JSON.stringify({
        ...base,
        object: "chat.completion",
        choices: [{ index: 0, message, finish_reason: finish }],
        usage,
      }),
    );
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({ server, baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` }),
    ),
  );
}

async function api(path: string, init: { method?: string; json?: unknown } = {}) {
  return fetch(`${dev.origin}${path}`, {
    method: init.method ?? (init.json ? "POST" : "GET"),
    headers: {
      ...(token ? { Authorization: `Bearer ${token}` } : {}),
      ...(init.json ? { "Content-Type": "application/json" } : {}),
    },
    body: init.json ? JSON.stringify(init.json) : undefined,
  });
}

beforeAll(async () => {
  const fake = await fakeModel();
  model = fake.server;
  dev = await startDevServer(PORT, { LLM_BASE_URL: fake.baseUrl, LLM_MODEL: "fake-e2e", LLM_API_KEY: "fake" });
  browser = await launchChromium();
  const signup = await api("/v1/api/signup", {
    json: { workspace_name: "Apps E2E", email: `apps-${Date.now()}@example.com`, password: PASSWORD },
  });
  expect(signup.status).toBe(201);
  token = ((await signup.json()) as { token: string }).token;
});

afterAll(async () => {
  await browser?.close();
  await dev?.stop();
  await new Promise((resolve) => model?.close(resolve));
});

describe("an app page in a real browser", () => {
  it("is published by an agent's turn, served, runs its script, and cannot read the API origin's cookies", async () => {
    const conversation = await api("/v1/api/conversations", { json: { title: "Make an app" } });
    expect(conversation.status).toBe(201);
    const { id } = (await conversation.json()) as { id: string };
    const turn = await api(`/v1/api/conversations/${id}/messages`, { json: { content: "Publish a cookie probe" } });
    expect(turn.status, await turn.clone().text()).toBe(200);
    // A public app waits for a person's approval first; approved, the same turn goes on and publishes it.
    const waiting = (await (await api("/v1/api/approvals")).json()) as {
      approvals: { id: string; tool_name: string }[];
    };
    expect(waiting.approvals.map((a) => a.tool_name)).toEqual(["publish_app"]);
    const decided = await api(`/v1/api/conversations/${id}/approvals/${waiting.approvals[0]!.id}`, {
      json: { approved: true },
    });
    expect(decided.status, await decided.clone().text()).toBe(202);
    // The resumed turn ends in the room; its reply then carries the call.
    const toolCalls = async () => {
      const read = (await (await api(`/v1/api/conversations/${id}`)).json()) as {
        messages: { tool_calls?: { name: string; ok: boolean }[] }[];
      };
      return read.messages.at(-1)?.tool_calls ?? [];
    };
    const published = JSON.stringify([{ name: "publish_app", ok: true }]);
    for (let i = 0; i < 60 && JSON.stringify(await toolCalls()) !== published; i++)
      await new Promise((r) => setTimeout(r, 500));
    expect(await toolCalls()).toEqual([{ name: "publish_app", ok: true }]);

    const list = (await (await api("/v1/api/apps")).json()) as { apps: { url: string; conversation_id: string }[] };
    expect(list.apps).toHaveLength(1);
    expect(list.apps[0]!.conversation_id).toBe(id);
    const url = list.apps[0]!.url.replace(/^https?:\/\/[^/]+/, dev.origin);

    const context = await browser.newContext();
    // A cookie the API origin's own pages can read: the app's page must not see it.
    await context.addCookies([{ name: "probe", value: "api-origin-secret", url: dev.origin }]);
    const page = await context.newPage();
    await page.goto(`${dev.origin}/v1/health`);
    expect(await page.evaluate(() => document.cookie)).toContain("probe=api-origin-secret");

    const response = await page.goto(url);
    expect(response!.status()).toBe(200);
    expect(response!.headers()["content-security-policy"]).toBe("sandbox allow-scripts allow-forms allow-popups");
    await page.waitForFunction(() => document.getElementById("out")?.textContent?.startsWith("ran|"));
    const out = (await page.textContent("#out"))!;
    expect(out).not.toContain("api-origin-secret");
    expect(out).toMatch(/^ran\|blocked:SecurityError\|null$/);
    await context.close();
  });
});
