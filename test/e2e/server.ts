/**
 * Starts the Worker under `wrangler dev` for browser tests: local D1 migrations applied to a
 * throwaway --persist-to directory, then the dev server on a fixed port, ready when
 * the Worker answers (see `answersCold`).
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";

const ROOT = path.resolve(import.meta.dirname, "../..");

export type DevServer = { origin: string; stop: () => Promise<void>; output: () => string };

/**
 * `vars` are passed as `--var NAME:VALUE` (e.g. a fake model endpoint). `persistTo` keeps the
 * local state in the caller's directory, kept after `stop()`, so a restarted server finds the
 * same users and tokens.
 */
export async function startDevServer(
  port: number,
  vars: Record<string, string> = {},
  { persistTo }: { persistTo?: string } = {},
): Promise<DevServer> {
  const persist = persistTo ?? mkdtempSync(path.join(tmpdir(), "svc-e2e-"));
  const env = { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "1" };
  const migrate = spawnSync(
    "npx",
    ["wrangler", "d1", "migrations", "apply", "DB", "--local", "--persist-to", persist],
    { cwd: ROOT, env, encoding: "utf8" },
  );
  if (migrate.status !== 0) throw new Error(`migrations failed:\n${migrate.stdout}\n${migrate.stderr}`);

  let log = "";
  const child: ChildProcess = spawn(
    "npx",
    [
      "wrangler",
      "dev",
      // The service and the PDF reader Worker its PDF_READER binding calls, in one dev session.
      "--config",
      "wrangler.toml",
      "--config",
      "workers/pdf-reader/wrangler.toml",
      "--port",
      String(port),
      "--ip",
      "127.0.0.1",
      "--persist-to",
      persist,
      "--inspector-port",
      "0",
      "--show-interactive-dev-session=false",
      ...Object.entries(vars).flatMap(([name, value]) => ["--var", `${name}:${value}`]),
    ],
    { cwd: ROOT, env, detached: true, stdio: ["ignore", "pipe", "pipe"] },
  );
  child.stdout?.on("data", (d) => (log += d));
  child.stderr?.on("data", (d) => (log += d));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let stopped = false;

  const origin = `http://localhost:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited early:\n${log}`);
    try {
      if (await answersCold(origin)) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`wrangler dev did not become ready:\n${log}`);
    await new Promise((r) => setTimeout(r, 500));
  }

  return {
    origin,
    output: () => log,
    stop: async () => {
      // Once: a test that failed before its restart leaves afterAll to stop the same server again.
      if (stopped) return;
      stopped = true;
      // The whole process group (npx, wrangler, the build and workerd), and the port must refuse
      // before the caller goes on: a restarted server must not meet any part of the old one.
      signalGroup(child.pid, "SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      signalGroup(child.pid, "SIGKILL");
      await portClosed(origin);
      if (!persistTo) rmSync(persist, { recursive: true, force: true });
    },
  };
}

/**
 * The Worker itself answers: the app's 404 problem for a path no area covers. The probe loads
 * no area's routes, so each test's first request to an area is the first that isolate makes
 * (a bug that only a cold isolate's first request meets shows here, as on a deploy).
 */
async function answersCold(origin: string): Promise<boolean> {
  const res = await fetch(`${origin}/e2e-ready`);
  await res.body?.cancel();
  return res.status === 404 && !!res.headers.get("content-type")?.startsWith("application/problem+json");
}

/** Signals every process of the group, which may be gone already (ESRCH). */
function signalGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  try {
    if (pid) process.kill(-pid, signal);
  } catch {
    // the group is gone already
  }
}

/** Resolves once nothing answers at `origin` any more (at most 10 s). */
async function portClosed(origin: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    try {
      await fetch(`${origin}/v1/health`, { signal: AbortSignal.timeout(1_000) });
    } catch (error) {
      if ((error as Error).name !== "TimeoutError") return; // refused: nothing listens
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${origin} still answers after wrangler dev was stopped`);
}

/** The whole body of a request to a fake service the e2e tests run (a model endpoint, say). */
export const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => resolve(body));
  });

/** Signs a new workspace up on the dev server; answers its admin's personal access token. */
export async function signupToken(origin: string, workspaceName: string): Promise<string> {
  const res = await fetch(`${origin}/v1/api/signup`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({
      workspace_name: workspaceName,
      email: `e2e-${crypto.randomUUID()}@example.com`,
      password: "correct horse battery",
    }),
  });
  if (res.status !== 201) throw new Error(`signup: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { token: string }).token;
}

/** A GET of the API as the token's holder (a POST of `json` when given); throws unless 2xx. */
export async function apiJson<T>(origin: string, token: string, path: string, json?: unknown): Promise<T> {
  const res = await fetch(`${origin}${path}`, {
    method: json ? "POST" : "GET",
    headers: { Authorization: `Bearer ${token}`, ...(json ? { "Content-Type": "application/json" } : {}) },
    body: json ? JSON.stringify(json) : undefined,
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** Headless Chromium as the browser tests run it ($CHROMIUM_PATH, else /usr/bin/chromium). */
export const launchChromium = () =>
  chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--no-first-run",
    ],
  });
