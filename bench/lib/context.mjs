// What the runner hands each suite (`ctx`): the step log and checks, the service bundle (built
// once per run), the core suites' shared runtime (started and seeded once), and a workerd of
// the suite's own. At most one workerd runs at a time, so no suite measures beside another's.
import path from "node:path";
import { bundleWorker } from "./bundle.mjs";
import { OUT, ROOT, startMiniflare } from "./harness.mjs";
import { startCore } from "./runtime.mjs";

export function createRun({ step, check }) {
  let bundle = null;
  let core = null; // a promise of the started runtime
  const owned = [];

  const bundleOnce = () => {
    if (bundle) return bundle;
    step("bundling src/index.ts with wrangler deploy --dry-run");
    bundle = bundleWorker(ROOT, path.join(OUT, "worker"));
    step(
      `bundle: ${bundle.modules.length} modules, ${(bundle.rawBytes / 1024).toFixed(1)} KiB raw, ${(bundle.gzipBytes / 1024).toFixed(1)} KiB gzip (wrangler: ${bundle.wranglerReport ?? "n/a"})`,
    );
    return bundle;
  };
  const disposeCore = async () => {
    const started = core;
    core = null;
    const runtime = await started?.catch(() => null);
    await runtime?.mf.dispose();
  };
  const disposeOwned = async () => {
    for (const mf of owned.splice(0)) await mf.dispose();
  };

  return {
    /** The `ctx` of one suite; `ctx.failures` holds the checks this suite failed. */
    context() {
      const failures = [];
      const ctx = {
        step,
        failures,
        check: (ok, what) => {
          if (!ok) failures.push(what);
          return check(ok, what);
        },
        bundle: bundleOnce,
        /** The shared runtime: `{ mf, urls, db, main, auth, agentsUrl, auditUrl }`. */
        core() {
          core ??= Promise.resolve().then(() => startCore({ bundle: bundleOnce(), step, check: ctx.check }));
          return core;
        },
        /** A workerd with these workers, ready; disposed when the suite ends. */
        async start(workers) {
          await disposeCore();
          const mf = startMiniflare(workers);
          owned.push(mf);
          await mf.ready;
          return mf;
        },
      };
      return ctx;
    },
    /** After each suite: its own workerd goes. */
    suiteDone: disposeOwned,
    async dispose() {
      await disposeOwned();
      await disposeCore();
    },
  };
}
