// Step 2: run the bundled Worker, the baseline Worker, the audit driver and the browser
// driver in one workerd through Miniflare's API (not `wrangler dev`, whose proxy costs
// 15-20x). Each Worker gets a direct socket so requests skip Miniflare's entry router too.
// `npm run bench` and `npm run bench:browser` both start the runtime here.
import path from "node:path";
import { convertV4MiniflareOptions, Log, LogLevel, Miniflare } from "miniflare";
import { serviceConfig } from "./config.mjs";

export const SERVICE = "workspace-agent-service";
export const BASELINE = "bench-baseline";
export const AUDIT = "bench-audit";
export const BROWSER = "bench-browser";

/** Vars that make the service benchable: no rate limits on signup, signup open. */
const BENCH_VARS = { RATE_LIMITS: "off", SIGNUP_MODE: "open" };

const directSocket = [{ host: "127.0.0.1", port: 0 }];

export async function startRuntime(root, bundle) {
  const config = serviceConfig(root);
  const service = {
    ...config,
    name: SERVICE,
    rootPath: root,
    modules: bundle.modules,
    modulesRoot: bundle.outDir,
    bindings: { ...config.bindings, ...BENCH_VARS },
    unsafeDirectSockets: directSocket,
  };
  const d1Id = config.d1Databases?.DB?.id ?? config.d1Databases?.DB;
  const common = {
    compatibilityDate: config.compatibilityDate,
    compatibilityFlags: config.compatibilityFlags,
    unsafeDirectSockets: directSocket,
  };
  const baseline = {
    ...common,
    name: BASELINE,
    modules: [{ type: "ESModule", path: path.join(root, "bench", "baseline-worker.mjs") }],
    modulesRoot: path.join(root, "bench"),
    d1Databases: { DB: d1Id },
  };
  const audit = {
    ...common,
    name: AUDIT,
    modules: [{ type: "ESModule", path: path.join(root, "bench", "audit-worker.mjs") }],
    modulesRoot: path.join(root, "bench"),
    durableObjects: {
      AUDIT_LOG: { className: "AuditLog", scriptName: SERVICE, useSQLite: true },
      BASELINE_LOG: { className: "BaselineLog", useSQLite: true },
    },
  };
  const browser = {
    ...common,
    name: BROWSER,
    modules: [{ type: "ESModule", path: path.join(root, "bench", "browser-driver.mjs") }],
    modulesRoot: path.join(root, "bench"),
    durableObjects: { BROWSER_SESSION: { className: "BrowserSession", scriptName: SERVICE, useSQLite: true } },
  };
  const mf = new Miniflare(
    convertV4MiniflareOptions({
      log: new Log(LogLevel.WARN),
      logRequests: false,
      // Placeholder Request.cf: the real one is fetched from the internet.
      cf: false,
      telemetry: { enabled: false },
      workers: [service, baseline, audit, browser],
    }),
  );
  await mf.ready;
  const urls = {
    service: await mf.unsafeGetDirectURL(SERVICE),
    baseline: await mf.unsafeGetDirectURL(BASELINE),
    audit: await mf.unsafeGetDirectURL(AUDIT),
    browser: await mf.unsafeGetDirectURL(BROWSER),
  };
  return { mf, urls, db: await mf.getD1Database("DB", SERVICE) };
}
