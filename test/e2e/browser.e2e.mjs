// End-to-end test of the local-browser channel: `wrangler dev` on port 8792 with local
// state in a temporary directory, the reference bridge driving headless Chromium, a local
// test page, and a fake OpenAI-compatible model whose scripted answers navigate to the
// page, read its text and answer with it.
//
//   npm run test:e2e:browser        (needs /usr/bin/chromium, or CHROMIUM_PATH)
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { startBridge } from "../../tools/browser-bridge/bridge.mjs";

const PORT = 8792;
const ORIGIN = `http://127.0.0.1:${PORT}`;
const ROOT = path.resolve(import.meta.dirname, "../..");
const WRANGLER = path.join(
  path.dirname(createRequire(import.meta.url).resolve("wrangler/package.json")),
  "bin/wrangler.js",
);
const SECRET = `marmalade-${Math.random().toString(36).slice(2, 8)}`;

const step = (msg) => console.log(`• ${msg}`);

/** @returns {Promise<{ server: import("node:http").Server, port: number }>} */
function listen(handler) {
  return new Promise((resolve) => {
    const server = createServer(handler);
    server.listen(0, "127.0.0.1", () =>
      resolve({ server, port: /** @type {import("node:net").AddressInfo} */ (server.address()).port }),
    );
  });
}

const readBody = (req) =>
  new Promise((resolve) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => resolve(body));
  });

/** The test page Chromium opens; records who fetched it. */
async function testPage() {
  const visits = [];
  const { server, port } = await listen((req, res) => {
    visits.push({ path: req.url, userAgent: req.headers["user-agent"] ?? "" });
    res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><html><head><title>Bridge E2E page</title></head>
<body><h1>Welcome</h1><p id="box">The secret word is ${SECRET}.</p><p style="display:none">hidden text is not visible</p></body></html>`);
  });
  return { server, url: `http://127.0.0.1:${port}/page`, visits };
}

/**
 * A fake OpenAI-compatible chat-completions endpoint. Its script is stateless, read from
 * the conversation: no tool result yet → navigate; one → read the page; two → answer with
 * the secret found in the page text.
 */
async function fakeModel(pageUrl) {
  const requests = [];
  const { server, port } = await listen(async (req, res) => {
    const body = JSON.parse(await readBody(req));
    requests.push(body);
    const toolMessages = body.messages.filter((m) => m.role === "tool");
    let message;
    if (toolMessages.length === 0) message = toolCall("computer_navigate", { url: pageUrl });
    else if (toolMessages.length === 1) message = toolCall("computer_read", {});
    else {
      const text = JSON.parse(toolMessages.at(-1).content).text ?? "";
      const found = /The secret word is ([\w-]+)/.exec(text)?.[1];
      message = {
        role: "assistant",
        content: found ? `The page says the secret word is ${found}.` : "I could not find it.",
      };
    }
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(
      JSON.stringify({
        id: `chatcmpl-${requests.length}`,
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        choices: [{ index: 0, message, finish_reason: message.tool_calls ? "tool_calls" : "stop" }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      }),
    );
  });
  return { server, baseUrl: `http://127.0.0.1:${port}/v1`, requests };
}

const toolCall = (name, args) => ({
  role: "assistant",
  content: null,
  tool_calls: [{ id: `call_${name}`, type: "function", function: { name, arguments: JSON.stringify(args) } }],
});

function run(args, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WRANGLER, ...args], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (c) => (out += c));
    child.stderr.on("data", (c) => (out += c));
    child.on("exit", (code) =>
      code === 0 ? resolve(out) : reject(new Error(`wrangler ${args[0]} failed (${code}):\n${out}`)),
    );
  });
}

async function waitFor(check, ms, what) {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const api = (method, p, { token, body } = {}) =>
  fetch(`${ORIGIN}${p}`, {
    method,
    headers: {
      ...(token ? { Authorization: `Bearer ${token}` } : {}),
      ...(body ? { "Content-Type": "application/json" } : {}),
    },
    body: body ? JSON.stringify(body) : undefined,
  });

async function main() {
  const persist = await mkdtemp(path.join(tmpdir(), "browser-e2e-"));
  const env = { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1", NO_COLOR: "1" };
  const page = await testPage();
  const model = await fakeModel(page.url);
  /** @type {import("node:child_process").ChildProcess | null} */
  let dev = null;
  let devLog = "";
  let bridge = null;
  try {
    step("applying D1 migrations to a fresh local state");
    await run(["d1", "migrations", "apply", "DB", "--local", "--persist-to", persist], env);

    step(`starting wrangler dev on ${PORT}`);
    dev = spawn(
      process.execPath,
      [
        WRANGLER,
        "dev",
        // The service and the PDF reader Worker its PDF_READER binding calls.
        "--config",
        "wrangler.toml",
        "--config",
        "workers/pdf-reader/wrangler.toml",
        "--port",
        String(PORT),
        "--ip",
        "127.0.0.1",
        "--inspector-port",
        "0",
        "--persist-to",
        persist,
        "--var",
        `LLM_BASE_URL:${model.baseUrl}`,
        "--var",
        "LLM_MODEL:fake-e2e",
        "--var",
        "RATE_LIMITS:off",
        "--show-interactive-dev-session=false",
      ],
      { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"], detached: true },
    );
    dev.stdout.on("data", (c) => (devLog += c));
    dev.stderr.on("data", (c) => (devLog += c));
    await waitFor(async () => (await fetch(`${ORIGIN}/v1/health`)).ok, 90_000, "wrangler dev");

    step("signing up a workspace");
    const signup = await api("POST", "/v1/api/signup", {
      body: { workspace_name: "E2E", email: `e2e-${Date.now()}@example.com`, password: "correct horse battery" },
    });
    assert.equal(signup.status, 201, await signup.clone().text());
    const { token } = await signup.json();

    step("ask before any browser is connected → 403");
    const early = await api("POST", "/v1/agent-browser/ask", { token, body: { prompt: "hi" } });
    assert.equal(early.status, 403);
    assert.equal((await early.json()).code, "browser_not_connected");

    step("starting the bridge with headless Chromium");
    bridge = await startBridge({ url: ORIGIN, token, headless: true, log: (l) => console.log(`  [bridge] ${l}`) });
    await Promise.race([
      bridge.connected(),
      new Promise((_, reject) => setTimeout(() => reject(new Error("bridge did not connect")), 20_000)),
    ]);

    step("asking the agent to read the page");
    const res = await api("POST", "/v1/agent-browser/ask", {
      token,
      body: { prompt: `Open ${page.url} and tell me the secret word.`, timeout_ms: 60_000 },
    });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    const reply = JSON.parse(text);
    assert.deepEqual(reply, { reply: `The page says the secret word is ${SECRET}.`, steps: 3 });

    assert.ok(
      page.visits.some((v) => v.path === "/page" && /Chrome/.test(v.userAgent)),
      "Chromium fetched the test page",
    );
    const [first] = model.requests;
    assert.deepEqual(first.tools.map((t) => t.function.name).sort(), [
      "computer_click",
      "computer_key",
      "computer_navigate",
      "computer_read",
      "computer_screenshot",
      "computer_scroll",
      "computer_type",
      "computer_url",
    ]);
    const readResult = JSON.parse(model.requests[2].messages.filter((m) => m.role === "tool").at(-1).content);
    assert.ok(!readResult.text.includes("hidden text"), "computer.read returns visible text only");
    assert.equal(await bridge.page.title(), "Bridge E2E page");

    step("an OAuth-style token is refused on ask");
    const oauth = await api("POST", "/v1/agent-browser/ask", {
      token: `svc_at_${"x".repeat(43)}`,
      body: { prompt: "hi" },
    });
    assert.equal(oauth.status, 403);

    console.log(`PASS browser end-to-end: reply ${JSON.stringify(reply.reply)} in ${reply.steps} steps`);
  } catch (e) {
    console.error(`FAIL ${e instanceof Error ? e.stack : e}`);
    if (devLog) console.error(`--- wrangler dev output ---\n${devLog.slice(-4_000)}`);
    process.exitCode = 1;
  } finally {
    await bridge?.stop().catch(() => {});
    if (dev?.pid) {
      try {
        process.kill(-dev.pid, "SIGTERM");
      } catch {
        // already gone
      }
    }
    page.server.close();
    model.server.close();
    await rm(persist, { recursive: true, force: true });
  }
}

await main();
