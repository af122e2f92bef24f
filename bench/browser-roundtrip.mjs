// Local-browser command round trip through the BrowserSession object, against a bare
// WebSocket echo, in one workerd run through Miniflare's API (never `wrangler dev`).
//
//   node bench/browser-roundtrip.mjs [--n 2000]
//
// Self-contained (bundles the Worker itself). Three latencies, each measured from this
// process, one request at a time, on warm connections:
//   echo     a text frame to a bare WebSocket in a Worker and back (the baseline)
//   http     an HTTP no-op to that Worker (what triggering a command costs by itself)
//   command  HTTP → Worker → BrowserSession.command() → frame to the extension socket held
//            here (connected through the real /v1/agent-browser/connect) → reply → HTTP answer
// The figure of merit is command / (http + echo): how much the object adds beyond the two
// transports a command cannot avoid.
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, rmSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { convertV4MiniflareOptions, Log, LogLevel, Miniflare } from "miniflare";
import { unstable_getMiniflareWorkerOptions } from "wrangler";

const ROOT = path.resolve(import.meta.dirname, "..");
const OUT = path.join(ROOT, "bench", ".out", "browser-roundtrip");
const SERVICE = "workspace-agent-service";
const DRIVER = "browser-bench-driver";
const { values } = parseArgs({ options: { n: { type: "string", default: "2000" } } });
const N = Number(values.n);
const WARMUP = Math.min(200, Math.ceil(N / 5));

// The driver Worker: a bare echo socket, an HTTP no-op, and a trigger for one command on a
// user's object (bound to the service's BrowserSession class).
const DRIVER_SCRIPT = `
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/echo") {
      const { 0: client, 1: server } = new WebSocketPair();
      server.accept();
      server.addEventListener("message", (e) => server.send(e.data));
      return new Response(null, { status: 101, webSocket: client });
    }
    if (url.pathname === "/noop") return new Response("{}", { headers: { "Content-Type": "application/json" } });
    if (url.pathname === "/command") {
      const outcome = await env.BROWSER_SESSION.getByName(url.searchParams.get("user")).command("computer.url", {});
      return Response.json(outcome, { status: outcome.ok ? 200 : 502 });
    }
    return new Response("not found", { status: 404 });
  },
};`;

const MODULE_TYPES = { ".js": "ESModule", ".mjs": "ESModule", ".sql": "Text", ".txt": "Text", ".html": "Text", ".bin": "Data", ".wasm": "CompiledWasm" };

function bundle() {
  rmSync(OUT, { recursive: true, force: true });
  const wrangler = path.join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js");
  const run = spawnSync(process.execPath, [wrangler, "deploy", "--dry-run", "--outdir", OUT], {
    cwd: ROOT,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", NO_COLOR: "1" },
    encoding: "utf8",
  });
  if (run.status !== 0) throw new Error(`wrangler deploy --dry-run failed:\n${run.stdout}\n${run.stderr}`);
  const files = readdirSync(OUT)
    .filter((f) => MODULE_TYPES[path.extname(f)])
    .sort((a, b) => (a === "index.js" ? -1 : b === "index.js" ? 1 : a.localeCompare(b)));
  return files.map((f) => ({ type: MODULE_TYPES[path.extname(f)], path: path.join(OUT, f) }));
}

async function start(modules) {
  const { workerOptions } = unstable_getMiniflareWorkerOptions(path.join(ROOT, "wrangler.toml"));
  const { modulesRules: _bundled, ...config } = workerOptions;
  const direct = [{ host: "127.0.0.1", port: 0 }];
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      log: new Log(LogLevel.WARN),
      cf: false,
      telemetry: { enabled: false },
      workers: [
        { ...config, name: SERVICE, rootPath: ROOT, modules, modulesRoot: OUT, bindings: { ...config.bindings, RATE_LIMITS: "off", SIGNUP_MODE: "open" }, unsafeDirectSockets: direct },
        {
          name: DRIVER,
          compatibilityDate: config.compatibilityDate,
          compatibilityFlags: config.compatibilityFlags,
          modules: [{ type: "ESModule", path: path.join(OUT, "driver.mjs"), contents: DRIVER_SCRIPT }],
          durableObjects: { BROWSER_SESSION: { className: "BrowserSession", scriptName: SERVICE, useSQLite: true } },
          unsafeDirectSockets: direct,
        },
      ],
    }),
  );
  await mf.ready;
  return { mf, service: await mf.unsafeGetDirectURL(SERVICE), driver: await mf.unsafeGetDirectURL(DRIVER) };
}

async function migrate(mf) {
  const db = await mf.getD1Database("DB", SERVICE);
  const dir = path.join(ROOT, "migrations");
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sql")).sort()) {
    for (const statement of readFileSync(path.join(dir, file), "utf8").split("--> statement-breakpoint")) {
      if (statement.trim()) await db.prepare(statement).run();
    }
  }
}

const ws = (url, protocols) =>
  new Promise((resolve, reject) => {
    const socket = new WebSocket(url, protocols);
    socket.addEventListener("open", () => resolve(socket), { once: true });
    socket.addEventListener("error", () => reject(new Error(`WebSocket to ${url} failed`)), { once: true });
  });

const toWs = (u) => u.replace(/^http/, "ws");

async function measure(label, once) {
  for (let i = 0; i < WARMUP; i++) await once();
  const samples = new Float64Array(N);
  for (let i = 0; i < N; i++) {
    const t = process.hrtime.bigint();
    await once();
    samples[i] = Number(process.hrtime.bigint() - t) / 1e6;
  }
  samples.sort();
  const at = (q) => samples[Math.min(N - 1, Math.floor(q * N))];
  return { label, p50: at(0.5), p99: at(0.99), mean: samples.reduce((a, b) => a + b, 0) / N };
}

async function main() {
  const modules = bundle();
  const { mf, service, driver } = await start(modules);
  try {
    await migrate(mf);
    const signup = await fetch(new URL("/v1/api/signup", service), {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ workspace_name: "Bench", email: `bench-${Date.now()}@example.com`, password: "correct horse battery" }),
    });
    if (signup.status !== 201) throw new Error(`signup: ${signup.status} ${await signup.text()}`);
    const { token, user } = await signup.json();

    // The extension: connected through the real route, answers every command at once.
    const extension = await ws(toWs(new URL("/v1/agent-browser/connect", service).href), [`svc-pat.${token}`]);
    extension.addEventListener("message", (e) => {
      const frame = JSON.parse(e.data);
      if (typeof frame.id === "number") extension.send(JSON.stringify({ type: "success", id: frame.id, result: { url: "https://bench.test/", title: "Bench" } }));
    });

    const echo = await ws(toWs(new URL("/echo", driver).href));
    let pendingEcho = null;
    echo.addEventListener("message", () => pendingEcho?.());
    const frame = JSON.stringify({ type: "success", id: 1, result: { url: "https://bench.test/", title: "Bench" } });
    const echoOnce = () =>
      new Promise((resolve) => {
        pendingEcho = resolve;
        echo.send(frame);
      });
    const noopUrl = new URL("/noop", driver);
    const commandUrl = new URL(`/command?user=${user.id}`, driver);
    const httpOnce = async () => {
      const r = await fetch(noopUrl);
      await r.arrayBuffer();
    };
    const commandOnce = async () => {
      const r = await fetch(commandUrl);
      if (r.status !== 200) throw new Error(`command failed: ${await r.text()}`);
      await r.arrayBuffer();
    };

    // Interleaved rounds so machine noise lands on every series alike.
    const rounds = 3;
    const results = { echo: [], http: [], command: [] };
    for (let r = 0; r < rounds; r++) {
      results.echo.push(await measure("echo", echoOnce));
      results.http.push(await measure("http", httpOnce));
      results.command.push(await measure("command", commandOnce));
    }
    const best = (list) => list.reduce((a, b) => (b.p50 < a.p50 ? b : a));
    const e = best(results.echo);
    const h = best(results.http);
    const c = best(results.command);
    const fmt = (x) => `${x.toFixed(3)} ms`;
    console.log(`browser command round trip (n=${N} per round, ${rounds} rounds, best round shown)`);
    console.log(`  bare WebSocket echo   p50 ${fmt(e.p50)}  p99 ${fmt(e.p99)}`);
    console.log(`  HTTP no-op            p50 ${fmt(h.p50)}  p99 ${fmt(h.p99)}`);
    console.log(`  command via object    p50 ${fmt(c.p50)}  p99 ${fmt(c.p99)}`);
    console.log(`  command / echo        p50 ${(c.p50 / e.p50).toFixed(2)}x  p99 ${(c.p99 / e.p99).toFixed(2)}x`);
    console.log(`  command / (http+echo) p50 ${(c.p50 / (h.p50 + e.p50)).toFixed(2)}x  p99 ${(c.p99 / (h.p99 + e.p99)).toFixed(2)}x`);
    extension.close();
    echo.close();
  } finally {
    await mf.dispose();
  }
}

await main();
