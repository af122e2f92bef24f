// A mixed write workload: agent create, patch and make-default from 8 workspaces, each change
// with its audit event; at the end every workspace's chain must verify whole and hold one
// event per change. Compared with reading the agents list on the same service.
import { envNumber, getJson } from "../lib/harness.mjs";
import { measureAlternating } from "../lib/load.mjs";
import { signup } from "../lib/seed.mjs";

const SECONDS = envNumber("BENCH_SECONDS", 3);
const ROUNDS = envNumber("BENCH_ROUNDS", 3);
const CONNECTIONS = envNumber("BENCH_CONNECTIONS", 32);
const WORKSPACES = 8;

/** The workspace's agent create, update and default events (the list delivers pending ones first). */
async function agentEvents(serviceUrl, w) {
  let total = 0;
  for (const kind of ["agent.create", "agent.update", "agent.default"]) {
    const url = new URL(`/v1/admin/audit?kind=${kind}&page_size=1&days=0`, serviceUrl);
    total += (await getJson(url, { headers: w.headers })).total;
  }
  return total;
}

export default {
  name: "writes",
  description: "mixed agent writes (create, patch, default; 8 workspaces) vs GET /v1/agents, chains verified",
  byDefault: true,
  async run(ctx) {
    const { check, step } = ctx;
    const { urls, agentsUrl } = await ctx.core();
    const writers = [];
    for (let i = 0; i < WORKSPACES; i++) {
      const w = await signup(urls.service, `Writer ${i}`);
      const headers = { authorization: `Bearer ${w.token}`, "content-type": "application/json" };
      const ids = [];
      for (const slug of ["left", "right"]) {
        const res = await fetch(agentsUrl(urls.service), {
          method: "POST",
          headers,
          body: JSON.stringify({ slug, display_name: slug }),
        });
        check(res.status === 200, `writes: creating agent ${slug} answered ${res.status}`);
        ids.push((await res.json()).id);
      }
      writers.push({ ...w, headers, ids });
    }
    const eventsBefore = await Promise.all(writers.map((w) => agentEvents(urls.service, w)));
    let n = 0; // requests built
    let answered = 0; // 2xx answers received, warm-up included
    const write = (req) => {
      const i = n++;
      const w = writers[i % WORKSPACES];
      const id = w.ids[Math.floor(i / WORKSPACES) % 2];
      const base = { ...req, headers: w.headers };
      switch (i % 3) {
        case 0:
          return {
            ...base,
            method: "POST",
            path: "/v1/agents",
            body: JSON.stringify({ slug: `w${i}`, display_name: `W ${i}` }),
          };
        case 1:
          return {
            ...base,
            method: "PATCH",
            path: `/v1/agents/${id}`,
            body: JSON.stringify({ description: `rev ${i}` }),
          };
        default:
          return { ...base, method: "POST", path: `/v1/agents/${id}/default`, body: undefined };
      }
    };
    step(
      `mixed writes (agent create / patch / default, ${WORKSPACES} workspaces) vs GET /v1/agents: ${ROUNDS} alternating rounds × ${SECONDS} s, ${CONNECTIONS} connections`,
    );
    const reader = writers[0];
    const r = await measureAlternating(
      [
        {
          name: "writes",
          url: new URL("/", urls.service).href,
          connections: CONNECTIONS,
          prepare: () => ({ requests: [{ setupRequest: write }] }),
          after: (res) => {
            answered += res["2xx"];
          },
        },
        { name: "reads", url: agentsUrl(urls.service), headers: reader.headers, connections: CONNECTIONS },
      ],
      { rounds: ROUNDS, seconds: SECONDS },
    );
    check(r.writes.failures === 0, `writes: ${r.writes.failures} failed requests`);
    step(
      `  writes: ${Math.round(r.writes.rps)} req/s, p50 ${r.writes.p50} ms, p99 ${r.writes.p99} ms, ${r.writes.failures} failures`,
    );
    step(`  reads: ${Math.round(r.reads.rps)} req/s, p50 ${r.reads.p50} ms, p99 ${r.reads.p99} ms`);

    // Every chain whole, one event per accepted change (the list delivers what is still in the outbox).
    const eventsAfter = await Promise.all(writers.map((w) => agentEvents(urls.service, w)));
    const written = eventsAfter.reduce((a, b) => a + b, 0) - eventsBefore.reduce((a, b) => a + b, 0);
    let whole = true;
    for (const w of writers) {
      const v = await getJson(new URL("/v1/admin/audit/verify?limit=1000000", urls.service), { headers: w.headers });
      whole =
        check(v.ok === true, `writes: workspace ${w.workspaceId} chain does not verify: ${JSON.stringify(v)}`) && whole;
    }
    // A request still in flight when a round ends may be answered after autocannon stopped counting:
    // its change and event exist, its answer is not counted. So: answered ≤ events ≤ requests built.
    whole =
      check(
        written >= answered && written <= n,
        `writes: ${written} agent events for ${answered} answered changes (${n} requests built)`,
      ) && whole;
    return [
      {
        figure: "mixed agent writes (8 workspaces)",
        ours: r.writes.rps,
        baseline: r.reads.rps,
        baselineName: "GET /v1/agents, same service",
        unit: "/s",
        ratio: r.writes.rps / r.reads.rps,
        target: null,
        pass: null,
      },
      {
        figure: "writes: chains whole, one event each",
        ours: `${written} events`,
        baseline: `${answered} answered`,
        baselineName: "",
        unit: "",
        ratio: null,
        target: "ok",
        pass: whole,
      },
    ];
  },
};
