// Audit appends: 64 concurrent writers on one workspace's chain (the service's AuditLog class,
// through the audit driver), against a plain-INSERT object and a no-op RPC; then the chain
// they wrote must verify whole.
import { envNumber, getJson } from "../lib/harness.mjs";
import { measureAlternating } from "../lib/load.mjs";

const SECONDS = envNumber("BENCH_SECONDS", 3);
const ROUNDS = envNumber("BENCH_ROUNDS", 3);
const WRITERS = 64;
const APPENDS_PER_REQUEST = envNumber("BENCH_APPENDS_PER_REQUEST", 10);

export default {
  name: "append",
  description: "audit appends/s with 64 concurrent writers vs a plain-INSERT object and a no-op RPC",
  byDefault: true,
  async run(ctx) {
    const { check, step } = ctx;
    const { auditUrl } = await ctx.core();
    step(
      `audit appends: ${WRITERS} concurrent writers × ${APPENDS_PER_REQUEST} sequential one-event appends per request, ${ROUNDS} rounds × ${SECONDS} s`,
    );
    const appendTarget = (log) => ({
      name: log,
      url: auditUrl("append", { log, name: `append-${log}`, n: APPENDS_PER_REQUEST }),
      connections: WRITERS,
    });
    const appends = await measureAlternating([appendTarget("audit"), appendTarget("plain"), appendTarget("noop")], {
      rounds: ROUNDS,
      seconds: SECONDS,
    });
    for (const [name, r] of Object.entries(appends)) {
      check(r.failures === 0, `append ${name}: ${r.failures} failed requests`);
      step(`  ${name}: ${Math.round(r.rps * APPENDS_PER_REQUEST)} appends/s, request p50 ${r.p50} ms, p99 ${r.p99} ms`);
    }
    const chain = await getJson(auditUrl("verify", { name: "append-audit", limit: 1e9 }));
    check(
      chain.ok && chain.first_seq === 1 && chain.checked === chain.last_seq,
      `chain after concurrent appends does not verify: ${JSON.stringify(chain)}`,
    );
    check(
      chain.checked >= appends.audit.requests * APPENDS_PER_REQUEST,
      "fewer chain entries than acknowledged appends",
    );
    step(`  chain written by ${WRITERS} concurrent writers: ${chain.checked} entries, verify ok=${chain.ok}`);
    const appendRate = appends.audit.rps * APPENDS_PER_REQUEST;
    return [
      {
        figure: `audit appends/s, ${WRITERS} writers`,
        ours: appendRate,
        baseline: appends.plain.rps * APPENDS_PER_REQUEST,
        baselineName: "plain INSERT object",
        unit: "/s",
        ratio: appends.audit.rps / appends.plain.rps,
        target: "≥ 5,000/s",
        pass: appendRate >= 5000,
      },
      {
        figure: "audit appends vs bare RPC",
        ours: appendRate,
        baseline: appends.noop.rps * APPENDS_PER_REQUEST,
        baselineName: "no-op RPC",
        unit: "/s",
        ratio: appends.audit.rps / appends.noop.rps,
        target: null,
        pass: null,
      },
      {
        figure: "chain intact after the above",
        ours: `${chain.checked.toLocaleString("en-US")} ok=${chain.ok}`,
        baseline: null,
        unit: "",
        ratio: null,
        target: "ok",
        pass: chain.ok,
      },
    ];
  },
};
