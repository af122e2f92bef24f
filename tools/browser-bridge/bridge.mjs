#!/usr/bin/env node
// Reference bridge for the local-browser channel: dials /v1/agent-browser/connect with a
// personal access token and runs each computer.* command in a real Chromium page driven by
// playwright-core. It is the executable description of the frame protocol
// (durable-objects/protocol.ts) for extension authors, and the client of the end-to-end test.
//
//   SVC_PAT=svc_pat_... npm run bridge -- --url http://localhost:8787 [--headed] [--chromium /usr/bin/chromium]
//   npm run bridge -- --url http://localhost:8787 --token-file ~/.svc-pat [--headed]
//
// The token comes from the SVC_PAT environment variable or a file, never from an argument:
// npm echoes a script's command line, and arguments land in shell history and process lists.
//
// The frame schemas are the service's own (durable-objects/protocol.ts, run by Node's
// built-in TypeScript type stripping), so the bridge and the server cannot drift apart.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { chromium } from "playwright-core";
import { afterClose, LIMITS, SUBPROTOCOL_PREFIX, serveCommands } from "../../durable-objects/protocol.ts";

/** Leave the server's per-command timeout (30 s) room to receive a navigation failure. */
const NAVIGATION_TIMEOUT_MS = 25_000;

/**
 * @typedef {object} BridgeOptions
 * @property {string} url            service origin, e.g. http://localhost:8787
 * @property {string} token          personal access token (svc_pat_…)
 * @property {boolean} [headless]    default true
 * @property {string} [executablePath] Chromium binary, default /usr/bin/chromium
 * @property {{ width: number, height: number }} [viewport]
 * @property {(line: string) => void} [log]
 */

/**
 * Starts the bridge. Resolves once Chromium runs; `connected()` resolves on the next open
 * socket; `stop()` closes the socket and the browser.
 * @param {BridgeOptions} options
 */
export async function startBridge(options) {
  const log = options.log ?? ((line) => console.error(`[bridge] ${line}`));
  const browser = await chromium.launch({
    executablePath: options.executablePath ?? process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    headless: options.headless ?? true,
  });
  const context = await browser.newContext({ viewport: options.viewport ?? { width: 1280, height: 800 } });
  const page = await context.newPage();
  const userAgent = await page.evaluate(() => navigator.userAgent);

  const endpoint = new URL("/v1/agent-browser/connect", options.url);
  endpoint.protocol = endpoint.protocol === "https:" ? "wss:" : "ws:";

  let stopped = false;
  /** @type {WebSocket | null} */
  let socket = null;
  let attempt = 0;
  /** @type {((value: void) => void)[]} */
  const onOpen = [];

  const connect = () => {
    if (stopped) return;
    const ws = new WebSocket(endpoint, [`${SUBPROTOCOL_PREFIX}${options.token}`]);
    socket = ws;
    // Commands run one at a time, in arrival order, on the one page; `computer.ready` goes first.
    serveCommands(ws, userAgent, (method, params) => run(page, method, params), log);
    ws.addEventListener("open", () => {
      attempt = 0;
      log(`connected to ${endpoint.origin}`);
      for (const resolve of onOpen.splice(0)) resolve();
    });
    ws.addEventListener("close", (event) => {
      if (socket === ws) socket = null;
      if (stopped) return;
      const { reconnectInMs, line } = afterClose(event, attempt++);
      log(line);
      if (reconnectInMs !== null) setTimeout(connect, reconnectInMs);
    });
    ws.addEventListener("error", () => {
      // A refused handshake (403, 426) surfaces as an error followed by close 1006; back-off handles it.
    });
  };

  connect();
  return {
    /** Resolves when a socket is open (now, or on the next connection). */
    connected: () =>
      socket?.readyState === WebSocket.OPEN ? Promise.resolve() : new Promise((resolve) => onOpen.push(resolve)),
    page,
    async stop() {
      stopped = true;
      socket?.close(1000, "bridge stopped");
      await browser.close();
    },
  };
}

/**
 * Runs one command on the page. Results are shaped as durable-objects/protocol.ts describes.
 * @param {import("playwright-core").Page} page
 * @param {string} method
 * @param {any} p
 */
async function run(page, method, p) {
  switch (method) {
    case "computer.screenshot":
      return { data: (await page.screenshot({ type: "png" })).toString("base64") };
    case "computer.navigate":
      await page.goto(p.url, { waitUntil: "load", timeout: NAVIGATION_TIMEOUT_MS });
      return { url: page.url(), title: await page.title() };
    case "computer.click":
      await page.mouse.click(p.x, p.y);
      return {};
    case "computer.type":
      await page.keyboard.type(p.text);
      return {};
    case "computer.key":
      await page.keyboard.press(p.key);
      return {};
    case "computer.scroll":
      await page.mouse.move(p.x, p.y);
      await page.mouse.wheel(p.dx, p.dy);
      return {};
    case "computer.url":
      return { url: page.url(), title: (await page.title()).slice(0, LIMITS.maxTextChars) };
    case "computer.read": {
      // innerText, not textContent: the agent should read what a person sees (no scripts, styles or hidden nodes).
      // biome-ignore lint/performance/useDomNodeTextContent: rendered text is the point here
      const text = await page.evaluate(() => document.body?.innerText ?? "");
      return { text: text.slice(0, LIMITS.maxTextChars) };
    }
    default:
      throw new Error(`unknown method ${method}`);
  }
}

const USAGE = `usage: SVC_PAT=svc_pat_... npm run bridge -- [--url http://localhost:8787] [--headed] [--chromium /usr/bin/chromium]
   or: npm run bridge -- --token-file <file holding the token> [--url ...] [--headed] [--chromium ...]

Connects to /v1/agent-browser/connect as the user the personal access token belongs to, and
runs each computer.* command the service sends in a Chromium page, until Ctrl-C.

  --url <origin>       the service (default http://localhost:8787)
  --token-file <file>  a file holding the token (or set SVC_PAT; never pass the token itself)
  --headed             show the browser window
  --chromium <path>    the Chromium binary (default $CHROMIUM_PATH, else /usr/bin/chromium)
  -h, --help           this text`;

/** The PAT from `--token-file` or `SVC_PAT`; an error message (never echoing a token) otherwise. */
export function bridgeToken(values, env = process.env) {
  if (values.token !== undefined)
    return {
      error:
        "--token is not accepted: a token on the command line is echoed by npm and kept in shell history. " +
        "Set SVC_PAT, or put the token in a file and pass --token-file.",
    };
  let token;
  if (values["token-file"] !== undefined) {
    try {
      token = readFileSync(values["token-file"], "utf8").trim();
    } catch (e) {
      return { error: `cannot read --token-file: ${e.code ?? e.message}` };
    }
  } else token = env.SVC_PAT?.trim();
  if (!token) return { error: "no token: set SVC_PAT or pass --token-file" };
  if (!token.startsWith("svc_pat_")) return { error: "the token is not a personal access token (svc_pat_...)" };
  return { token };
}

async function main() {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        url: { type: "string", default: "http://localhost:8787" },
        // Declared only to refuse it with a clear reason instead of a parse error.
        token: { type: "string" },
        "token-file": { type: "string" },
        headed: { type: "boolean", default: false },
        chromium: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
    }));
  } catch (e) {
    // A parse error names the option, never its value: a mistyped --token=… is not echoed.
    console.error(`${e.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" ? "unknown option" : "bad arguments"}\n${USAGE}`);
    process.exit(2);
  }
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const { token, error } = bridgeToken(values);
  if (error) {
    console.error(`${error}\n${USAGE}`);
    process.exit(2);
  }
  const bridge = await startBridge({
    url: values.url,
    token,
    headless: !values.headed,
    executablePath: values.chromium,
  });
  const shutdown = async () => {
    await bridge.stop();
    process.exit(0);
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) await main();
