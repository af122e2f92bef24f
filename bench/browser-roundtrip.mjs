// `npm run bench:browser`: only the browser command round trip of `npm run bench` (see
// bench/lib/browser.mjs), with more samples by default. Bundles the Worker into its own
// directory, so it can run beside `npm run bench`.
//
//   node bench/browser-roundtrip.mjs [--n 2000] [--rounds 3]
import path from "node:path";
import { parseArgs } from "node:util";
import { measureBrowserRoundTrip } from "./lib/browser.mjs";
import { bundleWorker } from "./lib/bundle.mjs";
import { startRuntime } from "./lib/runtime.mjs";
import { applyMigrations, signup } from "./lib/seed.mjs";

const ROOT = path.resolve(import.meta.dirname, "..");
const { values } = parseArgs({
  options: { n: { type: "string", default: "2000" }, rounds: { type: "string", default: "3" } },
});
const N = Number(values.n);
const ROUNDS = Number(values.rounds);

const bundle = bundleWorker(ROOT, path.join(ROOT, "bench", ".out", "browser-roundtrip"));
const { mf, urls, db } = await startRuntime(ROOT, bundle);
try {
  await applyMigrations(db, path.join(ROOT, "migrations"));
  const { token, userId } = await signup(urls.service, "Bench");
  const {
    echo: e,
    http: h,
    command: c,
  } = await measureBrowserRoundTrip({
    serviceUrl: urls.service,
    driverUrl: urls.browser,
    token,
    userId,
    n: N,
    rounds: ROUNDS,
  });
  const fmt = (x) => `${x.toFixed(3)} ms`;
  console.log(`browser command round trip (n=${N} per round, ${ROUNDS} rounds, best round shown)`);
  console.log(`  bare WebSocket echo   p50 ${fmt(e.p50)}  p99 ${fmt(e.p99)}`);
  console.log(`  HTTP no-op            p50 ${fmt(h.p50)}  p99 ${fmt(h.p99)}`);
  console.log(`  command via object    p50 ${fmt(c.p50)}  p99 ${fmt(c.p99)}`);
  console.log(`  command / echo        p50 ${(c.p50 / e.p50).toFixed(2)}x  p99 ${(c.p99 / e.p99).toFixed(2)}x`);
  console.log(
    `  command / (http+echo) p50 ${(c.p50 / (h.p50 + e.p50)).toFixed(2)}x  p99 ${(c.p99 / (h.p99 + e.p99)).toFixed(2)}x`,
  );
} finally {
  await mf.dispose();
}
