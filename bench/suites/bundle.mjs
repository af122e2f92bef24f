// The bundle as `wrangler deploy` would upload it, against its budget, and the CPU its global
// scope takes at startup (`wrangler check startup`), against the aim.
import path from "node:path";
import { BUNDLE_BUDGET_BYTES, profileStartup, STARTUP_AIM_MS } from "../lib/bundle.mjs";
import { OUT, ROOT } from "../lib/harness.mjs";

export default {
  name: "bundle",
  description: "bundle size (gzip) against the 1 MiB budget, startup CPU against the 50 ms aim",
  byDefault: true,
  async run(ctx) {
    const bundle = ctx.bundle();
    const startup = profileStartup(ROOT, path.join(OUT, "startup.cpuprofile"));
    ctx.step(`startup: ${startup.activeMs} ms of CPU in the global scope (profile: bench/.out/startup.cpuprofile)`);
    return [
      {
        figure: "bundle size (gzip)",
        ours: bundle.gzipBytes,
        baseline: BUNDLE_BUDGET_BYTES,
        baselineName: "budget",
        unit: "KiB",
        ratio: bundle.gzipBytes / BUNDLE_BUDGET_BYTES,
        target: "≤ 1.00",
        pass: bundle.gzipBytes <= BUNDLE_BUDGET_BYTES,
      },
      {
        figure: "startup CPU (global scope)",
        ours: startup.activeMs,
        baseline: STARTUP_AIM_MS,
        baselineName: "aim",
        unit: "ms",
        ratio: startup.activeMs / STARTUP_AIM_MS,
        target: "≤ 1.00",
        pass: startup.activeMs <= STARTUP_AIM_MS,
      },
    ];
  },
};
