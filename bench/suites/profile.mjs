// CPU time per page of the business-profile crawler's extraction (src/profile/extract.ts, css.ts,
// icons.ts and signatures.ts, streamed through HTMLRewriter) on the test fixtures, in workerd, beside a
// baseline measured in the same run: the same bytes through an HTMLRewriter with no handlers
// (the parse alone).
import { performance } from "node:perf_hooks";
import { bundleDriver, driverModules, envNumber } from "../lib/harness.mjs";

const ROUNDS = envNumber("BENCH_ROUNDS", 3);
const PER_REQUEST = envNumber("BENCH_PAGES_PER_REQUEST", 200);
const PAGES = ["wordpress", "nextjs", "shopify", "static", "brand"];
/** Targets: a fixture page well inside even the free plan's 10 ms per invocation; the 2 MiB cap well inside 30 s. */
const TARGET_PAGE_MS = 5;
const TARGET_CAPPED_MS = 1_000;

export default {
  name: "profile",
  description: "business-profile extraction CPU per fixture page and at the 2 MiB cap vs parse only",
  byDefault: false,
  async run(ctx) {
    ctx.step("bundling the profile driver (esbuild)");
    const driverFile = bundleDriver("profile-driver.ts", ["--loader:.html=text", "--loader:.css=text"]);
    const mf = await ctx.start([
      {
        name: "bench-profile",
        compatibilityDate: "2026-10-01",
        compatibilityFlags: ["nodejs_compat"],
        ...driverModules(driverFile),
      },
    ]);

    /** Wall time of one request running `n` extractions, per page; no I/O inside, so this is CPU. */
    async function perPage(page, mode, n) {
      const t = performance.now();
      const res = await mf.dispatchFetch(`http://bench/?page=${page}&mode=${mode}&n=${n}`);
      const body = await res.json();
      if (res.status !== 200) throw new Error(`${page}: ${res.status} ${JSON.stringify(body)}`);
      return { ms: (performance.now() - t) / n, bytes: body.bytes, last: body.last };
    }

    /** Best of the rounds (alternating ours and the baseline), after a warm-up. */
    async function measure(page, n) {
      await perPage(page, "ours", Math.max(1, n / 10));
      await perPage(page, "baseline", Math.max(1, n / 10));
      let ours = Number.POSITIVE_INFINITY;
      let base = Number.POSITIVE_INFINITY;
      let sample = null;
      for (let r = 0; r < ROUNDS; r++) {
        const o = await perPage(page, "ours", n);
        ours = Math.min(ours, o.ms);
        sample = o;
        base = Math.min(base, (await perPage(page, "baseline", n)).ms);
      }
      return { ours, base, bytes: sample.bytes, last: sample.last };
    }

    ctx.step(`extraction CPU per page (best of ${ROUNDS} rounds, ${PER_REQUEST} pages per request)`);
    const rows = [];
    let total = 0;
    for (const page of PAGES) {
      const m = await measure(page, PER_REQUEST);
      if (!m.last?.technologies?.length && page !== "static") throw new Error(`${page}: no technologies found`);
      total += m.ours;
      rows.push({
        figure: `${page} (${(m.bytes / 1024).toFixed(1)} KiB)`,
        ours: m.ours,
        baseline: m.base,
        baselineName: "parse only",
        unit: "ms",
        ratio: m.ours / m.base,
        target: `< ${TARGET_PAGE_MS} ms`,
        pass: m.ours < TARGET_PAGE_MS,
      });
    }
    rows.push({
      figure: "mean of the fixtures",
      ours: total / PAGES.length,
      unit: "ms",
      target: `< ${TARGET_PAGE_MS} ms`,
      pass: total / PAGES.length < TARGET_PAGE_MS,
    });
    const capped = await measure("capped", 5);
    rows.push({
      figure: `page at the cap (${(capped.bytes / 1024 / 1024).toFixed(2)} MiB)`,
      ours: capped.ours,
      baseline: capped.base,
      baselineName: "parse only",
      unit: "ms",
      ratio: capped.ours / capped.base,
      target: `< ${TARGET_CAPPED_MS} ms`,
      pass: capped.ours < TARGET_CAPPED_MS,
    });
    return rows;
  },
};
