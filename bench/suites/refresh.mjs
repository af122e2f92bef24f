// The refresh-token grant (see lib/refresh.mjs): every request rotates a token never presented
// before, against the raw D1 rotation in the baseline Worker, in alternating rounds; then D1
// must show every token rotated exactly once.
import { envNumber } from "../lib/harness.mjs";
import { measureAlternating } from "../lib/load.mjs";
import { addPublicClient, refreshProblems, refreshTarget, rotationState, seedGrants } from "../lib/refresh.mjs";

const SECONDS = envNumber("BENCH_SECONDS", 3);
const ROUNDS = envNumber("BENCH_ROUNDS", 3);
const CONNECTIONS = envNumber("BENCH_CONNECTIONS", 32);

export default {
  name: "refresh",
  description: "POST /v1/oauth/token refresh_token rotation vs a raw D1 rotation Worker",
  byDefault: true,
  async run(ctx) {
    const { check, step } = ctx;
    const { urls, db, main } = await ctx.core();
    const tokenUrl = (base) => new URL("/v1/oauth/token", base).href;
    const owner = { workspaceId: main.workspaceId, userId: main.userId };
    const clients = {
      ours: "svc_client_bench_ours",
      baseline: "svc_client_bench_baseline",
      check: "svc_client_bench_check",
    };
    for (const clientId of Object.values(clients)) await addPublicClient(db, { ...owner, clientId });

    // The reuse check below is not vacuous: a token presented twice revokes its grant.
    const [probe] = await seedGrants(db, { ...owner, clientId: clients.check }, 1);
    const form = { "content-type": "application/x-www-form-urlencoded" };
    const probeBody = `grant_type=refresh_token&client_id=${clients.check}&refresh_token=${probe}`;
    const first = await fetch(tokenUrl(urls.service), { method: "POST", headers: form, body: probeBody });
    await first.arrayBuffer();
    const again = await fetch(tokenUrl(urls.service), { method: "POST", headers: form, body: probeBody });
    const againBody = await again.json();
    const probeState = await rotationState(db, clients.check);
    check(
      first.status === 200 && again.status === 400 && againBody.error === "invalid_grant" && probeState.revoked === 1,
      `a refresh token presented twice: ${first.status} then ${again.status} ${JSON.stringify(againBody)}, ${probeState.revoked} grant(s) revoked (expected 200, 400 invalid_grant, 1)`,
    );

    step(
      `refresh_token grant vs raw D1 rotation worker: ${ROUNDS} alternating rounds of about ${SECONDS} s, ${CONNECTIONS} connections, one fresh token per request`,
    );
    const targets = [
      refreshTarget(db, {
        name: "ours",
        url: tokenUrl(urls.service),
        connections: CONNECTIONS,
        clientId: clients.ours,
        ...owner,
      }),
      refreshTarget(db, {
        name: "baseline",
        url: tokenUrl(urls.baseline),
        connections: CONNECTIONS,
        clientId: clients.baseline,
        ...owner,
      }),
    ];
    const refresh = await measureAlternating(targets, { rounds: ROUNDS, seconds: SECONDS });
    let sound = true;
    for (const t of targets) {
      const state = await rotationState(db, clients[t.name]);
      const r = refresh[t.name];
      for (const problem of refreshProblems(t, state)) sound = check(false, problem);
      sound = check(r.failures === 0, `refresh ${t.name}: ${r.failures} failed requests`) && sound;
      step(
        `  ${t.name}: ${Math.round(r.rps)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms; ${t.stats.ok} of ${t.stats.handedOut} tokens answered 200 (warm-up included), ` +
          `${t.stats.issued.size} distinct new tokens, D1: ${state.rotated} rotated, ${state.revoked} grants revoked`,
      );
    }
    const ours = refresh.ours.rps;
    const baseline = refresh.baseline.rps;
    return [
      {
        figure: "refresh_token grant (rotation)",
        ours,
        baseline,
        baselineName: "raw D1 rotation worker",
        unit: "/s",
        ratio: ours / baseline,
        target: null,
        pass: null,
      },
      {
        figure: "refresh grant: our cost per request",
        ours: `${Math.round(1e6 / ours - 1e6 / baseline)} µs`,
        baseline: `${Math.round(1e6 / baseline)} µs`,
        baselineName: "baseline's whole request",
        unit: "",
        ratio: null,
        target: null,
        pass: null,
      },
      {
        figure: "refresh tokens rotated once each",
        ours: `${targets.reduce((n, t) => n + t.stats.ok, 0).toLocaleString("en-US")} ok=${sound}`,
        baseline: null,
        unit: "",
        ratio: null,
        target: "ok",
        pass: sound,
      },
    ];
  },
};
