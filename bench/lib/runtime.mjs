// Step 2: run the bundled Worker, the baseline Worker, the audit driver and the browser
// driver in one workerd through Miniflare's API (not `wrangler dev`, whose proxy costs
// 15-20x). Each Worker gets a direct socket so requests skip Miniflare's entry router too.
// `npm run bench` and `npm run bench:browser` both start the runtime here.
import path from "node:path";
import { serviceConfig } from "./config.mjs";
import { DIRECT, SERVICE, serviceWorker, startMiniflare } from "./harness.mjs";

export { SERVICE };
export const BASELINE = "bench-baseline";
export const AUDIT = "bench-audit";
export const BROWSER = "bench-browser";

export async function startRuntime(root, bundle) {
  const config = serviceConfig(root);
  const service = serviceWorker(bundle, config);
  const d1Id = config.d1Databases?.DB?.id ?? config.d1Databases?.DB;
  const common = {
    compatibilityDate: config.compatibilityDate,
    compatibilityFlags: config.compatibilityFlags,
    unsafeDirectSockets: DIRECT,
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
  const mf = startMiniflare([service, baseline, audit, browser]);
  await mf.ready;
  const urls = {
    service: await mf.unsafeGetDirectURL(SERVICE),
    baseline: await mf.unsafeGetDirectURL(BASELINE),
    audit: await mf.unsafeGetDirectURL(AUDIT),
    browser: await mf.unsafeGetDirectURL(BROWSER),
  };
  return { mf, urls, db: await mf.getD1Database("DB", SERVICE) };
}
