// GET /v1/agents with a PAT against the raw D1 baseline Worker doing the same two reads, and
// against GET /v1/health (no I/O: the runtime's ceiling), in alternating rounds.
import { envNumber } from "../lib/harness.mjs";
import { measureAlternating } from "../lib/load.mjs";
import { cpuRow } from "../lib/report.mjs";

const SECONDS = envNumber("BENCH_SECONDS", 3);
const ROUNDS = envNumber("BENCH_ROUNDS", 3);
const CONNECTIONS = envNumber("BENCH_CONNECTIONS", 32);

export default {
  name: "http",
  description: "GET /v1/agents (PAT) vs a raw D1 baseline Worker and vs GET /v1/health",
  byDefault: true,
  async run(ctx) {
    const { urls, auth, agentsUrl } = await ctx.core();
    ctx.step(
      `GET /v1/agents vs baseline vs /v1/health: ${ROUNDS} alternating rounds × ${SECONDS} s, ${CONNECTIONS} connections`,
    );
    const http = await measureAlternating(
      [
        { name: "agents", url: agentsUrl(urls.service), headers: auth, connections: CONNECTIONS },
        { name: "baseline", url: agentsUrl(urls.baseline), headers: auth, connections: CONNECTIONS },
        { name: "health", url: new URL("/v1/health", urls.service).href, connections: CONNECTIONS },
      ],
      { rounds: ROUNDS, seconds: SECONDS },
    );
    for (const [name, r] of Object.entries(http)) {
      ctx.check(r.failures === 0, `${name}: ${r.failures} failed requests`);
      ctx.step(
        `  ${name}: ${Math.round(r.rps)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms, ${r.failures} failures, ${Math.round(r.cpuUs ?? 0)} µs CPU a request`,
      );
    }
    return [
      {
        figure: "GET /v1/agents (PAT)",
        ours: http.agents.rps,
        baseline: http.baseline.rps,
        baselineName: "raw D1 worker",
        unit: "/s",
        ratio: http.agents.rps / http.baseline.rps,
        target: "≥ 0.95",
        pass: http.agents.rps / http.baseline.rps >= 0.95,
      },
      cpuRow("GET /v1/agents (PAT): CPU a request", http.agents, http.baseline, "raw D1 worker", 0.95),
      {
        figure: "GET /v1/agents: our cost per request",
        ours: `${Math.round(1e6 / http.agents.rps - 1e6 / http.baseline.rps)} µs`,
        baseline: `${Math.round(1e6 / http.baseline.rps)} µs`,
        baselineName: "baseline's whole request",
        unit: "",
        ratio: null,
        target: null,
        pass: null,
      },
      {
        figure: "GET /v1/agents vs runtime ceiling",
        ours: http.agents.rps,
        baseline: http.health.rps,
        baselineName: "GET /v1/health",
        unit: "/s",
        ratio: http.agents.rps / http.health.rps,
        target: null,
        pass: null,
      },
    ].filter(Boolean);
  },
};
