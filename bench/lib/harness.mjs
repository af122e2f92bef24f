// What every suite shares: the Node check, knobs from the environment, a timed step log with
// the list of failed checks, the machine line; and the Miniflare pieces: the bundled service
// as a worker (every binding of wrangler.toml), baselines and drivers (esbuild), one workerd.
import { spawnSync } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { convertV4MiniflareOptions, Log, LogLevel, Miniflare } from "miniflare";
import { serviceConfig } from "./config.mjs";
import { inspectorOptions } from "./cpu-profile.mjs";

export const ROOT = path.resolve(import.meta.dirname, "..", "..");
export const OUT = path.join(ROOT, "bench", ".out");
/** The baseline Workers and the drivers around the service's own modules. */
export const BASELINES = path.join(ROOT, "bench", "baselines");
export const SERVICE = "workspace-agent-service";
/** A direct socket per Worker, so requests skip Miniflare's entry router. */
export const DIRECT = [{ host: "127.0.0.1", port: 0 }];

/** A positive number from the environment, else the fallback. */
export function envNumber(name, fallback) {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

/** GET (or `init`) a JSON answer; anything but 2xx throws with the start of the body. */
export async function getJson(url, init) {
  const res = await fetch(url, init);
  const text = await res.text();
  if (!res.ok) throw new Error(`${init?.method ?? "GET"} ${url} → ${res.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text);
}

/**
 * Starts a bench run: refuses Node < 22 (wrangler and Miniflare need it; `npm run <script>`
 * brings Node 24), prints the machine line, and answers `step` (a log line with the elapsed
 * time) and `check` (records a failed expectation in `failures`).
 */
export function benchScript(npmScript, machineNote = "") {
  if (Number(process.versions.node.split(".")[0]) < 22) {
    console.error(
      `Node ${process.versions.node} is too old: run through \`npm run ${npmScript}\` (Node 24 from the node dev dependency).`,
    );
    process.exit(1);
  }
  const load = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
  console.log(`node ${process.versions.node}, ${os.cpus().length} CPUs, load average ${load}${machineNote}`);
  const started = performance.now();
  const failures = [];
  return {
    failures,
    step: (msg) => console.log(`[${((performance.now() - started) / 1000).toFixed(1).padStart(5)} s] ${msg}`),
    check: (ok, what) => {
      if (!ok) failures.push(what);
      return ok;
    },
  };
}

/** A plain-JavaScript Worker of bench/baselines/ as Miniflare modules (with common.mjs, which they may import). */
export const baselineModules = (file) => ({
  modules: [file, "common.mjs"].map((name) => ({ type: "ESModule", path: path.join(BASELINES, name) })),
  modulesRoot: BASELINES,
});

/** A Worker bundled by `bundleDriver` (its answer, `file`) as Miniflare modules. */
export const driverModules = (file) => ({ modules: [{ type: "ESModule", path: file }], modulesRoot: OUT });

/** What a Worker beside the service takes from wrangler.toml (`config`): its compatibility settings; and a direct socket. */
export const besideService = (config) => ({
  compatibilityDate: config.compatibilityDate,
  compatibilityFlags: config.compatibilityFlags,
  unsafeDirectSockets: DIRECT,
});

/** wrangler.toml's options for the service, as Miniflare takes them (see config.mjs). */
export const wranglerConfig = () => serviceConfig(ROOT);

/** The id of wrangler.toml's D1 database, for a Worker that shares the service's. */
export const d1IdOf = (config) => config.d1Databases?.DB?.id ?? config.d1Databases?.DB;

/**
 * Bundles a driver Worker of bench/baselines/ (TypeScript importing the service's own modules)
 * with esbuild; answers its path.
 */
export function bundleDriver(file, extraArgs = []) {
  const entry = path.join(BASELINES, file);
  const outfile = path.join(OUT, `${path.basename(entry, path.extname(entry))}.mjs`);
  const run = spawnSync(
    path.join(ROOT, "node_modules", ".bin", "esbuild"),
    [
      entry,
      "--bundle",
      "--format=esm",
      "--platform=neutral",
      "--conditions=workerd,worker",
      "--main-fields=module,main",
      "--external:cloudflare:*",
      "--external:node:*",
      ...extraArgs,
      `--outfile=${outfile}`,
    ],
    { cwd: ROOT, encoding: "utf8" },
  );
  if (run.status !== 0) throw new Error(`esbuild failed:\n${run.stderr}`);
  return outfile;
}

/**
 * The bundled service as a Miniflare worker: wrangler.toml's options (`config`, from
 * serviceConfig) with rate limits off and sign-up open, plus `bindings`.
 */
export function serviceWorker(bundle, config, bindings = {}) {
  return {
    ...config,
    name: SERVICE,
    rootPath: ROOT,
    modules: bundle.modules,
    modulesRoot: bundle.outDir,
    bindings: { ...config.bindings, RATE_LIMITS: "off", SIGNUP_MODE: "open", ...bindings },
    unsafeDirectSockets: DIRECT,
  };
}

/** One workerd with these workers; quiet, and with a placeholder Request.cf (the real one is fetched online). */
export function startMiniflare(workers) {
  return new Miniflare(
    convertV4MiniflareOptions({
      log: new Log(LogLevel.WARN),
      logRequests: false,
      cf: false,
      telemetry: { enabled: false },
      ...inspectorOptions(),
      workers,
    }),
  );
}
