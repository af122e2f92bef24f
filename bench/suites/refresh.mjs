// The refresh-token grant (see lib/refresh.mjs): every request rotates a token never presented
// before, against the raw D1 rotation in the baseline Worker and against the same grant through
// @cloudflare/workers-oauth-provider (the peer), in alternating rounds; then D1 must show every
// token of ours and the baseline's rotated exactly once.
import { envNumber } from "../lib/harness.mjs";
import { measureAlternating } from "../lib/load.mjs";
import {
  addPublicClient,
  peerClient,
  peerTokenResponse,
  refreshProblems,
  refreshTarget,
  rotationState,
  seedGrants,
} from "../lib/refresh.mjs";
import { cpuRow } from "../lib/report.mjs";

const SECONDS = envNumber("BENCH_SECONDS", 3);
const ROUNDS = envNumber("BENCH_ROUNDS", 3);
const CONNECTIONS = envNumber("BENCH_CONNECTIONS", 32);

export default {
  name: "refresh",
  description: "POST /v1/oauth/token refresh_token rotation vs a raw D1 rotation Worker and workers-oauth-provider",
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

    const peer = await peerClient(urls.oauthPeer);
    step(
      `refresh_token grant vs raw D1 rotation worker vs workers-oauth-provider: ${ROUNDS} alternating rounds of about ${SECONDS} s, ${CONNECTIONS} connections, one fresh token per request`,
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
      refreshTarget(db, {
        name: "peer",
        url: tokenUrl(urls.oauthPeer),
        connections: CONNECTIONS,
        clientId: peer.clientId,
        seed: peer.seed,
        isTokenResponse: peerTokenResponse,
      }),
    ];
    const refresh = await measureAlternating(targets, { rounds: ROUNDS, seconds: SECONDS });
    let sound = true;
    for (const t of targets) {
      const state = t.name === "peer" ? null : await rotationState(db, clients[t.name]);
      const r = refresh[t.name];
      for (const problem of refreshProblems(t, state)) sound = check(false, problem);
      sound = check(r.failures === 0, `refresh ${t.name}: ${r.failures} failed requests`) && sound;
      step(
        `  ${t.name}: ${Math.round(r.rps)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms, ${Math.round(r.cpuUs ?? 0)} µs CPU a request; ` +
          `${t.stats.ok} of ${t.stats.handedOut} tokens answered 200 (warm-up included), ${t.stats.issued.size} distinct new tokens` +
          (state ? `, D1: ${state.rotated} rotated, ${state.revoked} grants revoked` : ""),
      );
    }
    const ours = refresh.ours.rps;
    const baseline = refresh.baseline.rps;
    const peerRps = refresh.peer.rps;
    return [
      {
        figure: "refresh_token grant (rotation)",
        ours,
        baseline,
        baselineName: "raw D1 rotation worker",
        unit: "/s",
        ratio: ours / baseline,
        target: "≥ 0.95",
        pass: ours / baseline >= 0.95,
      },
      cpuRow("refresh grant: CPU a request", refresh.ours, refresh.baseline, "raw D1 rotation worker", 0.95),
      {
        figure: "refresh grant vs workers-oauth-provider",
        ours,
        baseline: peerRps,
        baselineName: "workers-oauth-provider",
        unit: "/s",
        ratio: ours / peerRps,
        target: "≥ 1.50",
        pass: ours / peerRps >= 1.5,
      },
      cpuRow("refresh grant vs the peer: CPU a request", refresh.ours, refresh.peer, "workers-oauth-provider", 1.5),
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
    ].filter(Boolean);
  },
};
