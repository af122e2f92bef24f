// What one hop out of a Worker costs in a local workerd, as context for the turn suite's CPU
// figures: a local D1 call and an RPC to a Durable Object, each over a request that does
// nothing (baselines/hops-worker.mjs), in alternating rounds. Miniflare's D1 is a Worker and an
// object in the same process, so a local D1 call is counted in the workerd CPU the suites
// measure, while in production D1 runs elsewhere.
import { baselineModules, besideService, envNumber, wranglerConfig } from "../lib/harness.mjs";
import { measureAlternating } from "../lib/load.mjs";

const SECONDS = envNumber("BENCH_SECONDS", 3);
const ROUNDS = envNumber("BENCH_ROUNDS", 3);
const CONNECTIONS = envNumber("BENCH_CONNECTIONS", 16);
const WORKER = "bench-hops";
const PATHS = ["nothing", "d1", "d1-batch", "object", "object-write"];
const WHAT = {
  d1: "a D1 call (one SELECT)",
  "d1-batch": "a D1 call (a batch of 8 SELECTs)",
  object: "an RPC to a Durable Object (one read)",
  "object-write": "an RPC to a Durable Object (one write, one commit)",
};

export default {
  name: "hops",
  description: "workerd CPU of one local D1 call and one Durable Object RPC, over a request that does nothing",
  byDefault: false,
  async run(ctx) {
    const config = wranglerConfig();
    const mf = await ctx.start([
      {
        ...besideService(config),
        name: WORKER,
        ...baselineModules("hops-worker.mjs"),
        d1Databases: { DB: "bench-hops" },
        durableObjects: { HOP: { className: "Hop", useSQLite: true } },
      },
    ]);
    const base = (await mf.unsafeGetDirectURL(WORKER)).href;
    const db = await mf.getD1Database("DB", WORKER);
    await db.exec("CREATE TABLE hops (id INTEGER PRIMARY KEY, value TEXT NOT NULL)");
    await db.batch(Array.from({ length: 8 }, (_, i) => db.prepare("INSERT INTO hops VALUES (?, ?)").bind(i + 1, "x")));
    for (const p of PATHS) {
      const res = await fetch(new URL(p, base));
      ctx.check(res.status === 200, `GET /${p}: ${res.status}`);
    }
    ctx.step(`hops: ${ROUNDS} alternating rounds of about ${SECONDS} s, ${CONNECTIONS} connections`);
    const r = await measureAlternating(
      PATHS.map((p) => ({ name: p, url: new URL(p, base).href, connections: CONNECTIONS })),
      { rounds: ROUNDS, seconds: SECONDS },
    );
    const nothing = r.nothing.cpuUs;
    for (const p of PATHS)
      ctx.step(`  /${p}: ${Math.round(r[p].rps)} req/s, ${Math.round(r[p].cpuUs)} µs CPU a request`);
    return PATHS.slice(1).map((p) => ({
      figure: `${WHAT[p]}, over a bare request`,
      ours: `${Math.round(r[p].cpuUs - nothing)} µs`,
      baseline: `${Math.round(nothing)} µs`,
      baselineName: "the bare request's CPU",
      ratio: null,
      target: null,
      pass: null,
    }));
  },
};
