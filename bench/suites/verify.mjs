// Verifying a chain of 100 000 entries (AuditLog.verify) against reading the same rows from a
// plain-INSERT object without hashing; and the bulk appends that fill both.
import { performance } from "node:perf_hooks";
import { envNumber, getJson } from "../lib/harness.mjs";

const ENTRIES = envNumber("BENCH_VERIFY_ENTRIES", 100_000);
const FILL_BATCH = 1000;

async function timed(fn) {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

// Best of n: on a shared machine, interference only ever adds time.
const best = (xs) => Math.min(...xs);

export default {
  name: "verify",
  description: "AuditLog.verify of 100 000 entries vs the same rows read without hashing; bulk append",
  byDefault: true,
  async run(ctx) {
    const { check, step } = ctx;
    const { auditUrl } = await ctx.core();
    step(
      `filling one chain with ${ENTRIES.toLocaleString("en-US")} entries (batches of ${FILL_BATCH}) and its plain twin`,
    );
    const fill = (log) =>
      timed(() => getJson(auditUrl("fill", { log, name: `verify-${log}`, total: ENTRIES, batch: FILL_BATCH })));
    const fillAudit = await fill("audit");
    const fillPlain = await fill("plain");
    step(`  filled: chain ${(fillAudit.ms / 1000).toFixed(1)} s, plain ${(fillPlain.ms / 1000).toFixed(1)} s`);
    const verifyRuns = [];
    const scanRuns = [];
    let verified;
    for (let i = 0; i < 3; i++) {
      const v = await timed(() => getJson(auditUrl("verify", { name: "verify-audit", limit: ENTRIES })));
      verifyRuns.push(v.ms);
      verified = v.value;
      const s = await timed(() => getJson(auditUrl("scan", { name: "verify-plain", limit: ENTRIES })));
      scanRuns.push(s.ms);
      check(s.value.checked === ENTRIES, `scan read ${s.value.checked} rows`);
    }
    check(verified.ok && verified.checked === ENTRIES, `verify of the filled chain: ${JSON.stringify(verified)}`);
    step(
      `  verify runs ${verifyRuns.map((m) => m.toFixed(0)).join(", ")} ms; scan runs ${scanRuns.map((m) => m.toFixed(0)).join(", ")} ms`,
    );
    const verifyMs = best(verifyRuns);
    return [
      {
        figure: `verify ${ENTRIES.toLocaleString("en-US")} entries (best of 3)`,
        ours: verifyMs,
        baseline: best(scanRuns),
        baselineName: "same rows read, no hashing",
        unit: "ms",
        ratio: verifyMs / best(scanRuns),
        target: "< 500 ms",
        pass: verifyMs < 500,
      },
      {
        figure: `bulk append, batches of ${FILL_BATCH}`,
        ours: (ENTRIES / fillAudit.ms) * 1000,
        baseline: (ENTRIES / fillPlain.ms) * 1000,
        baselineName: "plain INSERT object",
        unit: "/s",
        ratio: fillPlain.ms / fillAudit.ms,
        target: null,
        pass: null,
      },
    ];
  },
};
