// Artifact download throughput (a 10 MiB object) through the service's
// GET /v1/api/artifacts/{id}/download (PAT, visibility read, headers) against a bare R2 `get`
// Worker on the same bucket, in its own workerd and in alternating rounds.
import { createHash, randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { baselineModules, besideService, envNumber, SERVICE, serviceWorker, wranglerConfig } from "../lib/harness.mjs";
import { migratedDb, signup } from "../lib/seed.mjs";

const ROUNDS = envNumber("BENCH_ROUNDS", 5);
// Each response is 10 MiB: a few downloads at a time already keep the runtime busy.
const CONNECTIONS = envNumber("BENCH_ARTIFACT_CONNECTIONS", 2);
/** Downloads per target and round (every one of them is read to the end and counted). */
const PER_ROUND = envNumber("BENCH_ARTIFACT_DOWNLOADS", 12);
const SIZE = 10 * 1024 * 1024;

/**
 * `count` downloads of a target, `CONNECTIONS` at a time, each body read to its end and its
 * length checked; answers the wall time. autocannon is not used here: with responses of
 * 10 MiB its one-second samples hold only a handful of requests.
 */
async function downloads(t, count, check) {
  let next = 0;
  let done = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (next < count) {
      next++;
      const res = await fetch(t.url, { headers: t.headers });
      const reader = res.body.getReader();
      let n = 0;
      for (let c = await reader.read(); !c.done; c = await reader.read()) n += c.value.length;
      if (check(res.status === 200 && n === SIZE, `${t.name}: ${res.status}, ${n} bytes`)) done++;
    }
  };
  await Promise.all(Array.from({ length: CONNECTIONS }, worker));
  return { seconds: (performance.now() - t0) / 1000, count: done };
}

export default {
  name: "artifacts",
  description: "10 MiB artifact download through the real route vs a bare R2 get Worker",
  byDefault: false,
  async run(ctx) {
    const { check, step } = ctx;
    const bundle = ctx.bundle();
    const config = wranglerConfig();
    const bucket = config.r2Buckets?.FILES?.id ?? config.r2Buckets?.FILES;
    const mf = await ctx.start([
      serviceWorker(bundle, config),
      {
        name: "bench-artifacts-baseline",
        ...besideService(config),
        ...baselineModules("artifacts-baseline-worker.mjs"),
        r2Buckets: { FILES: bucket },
      },
    ]);
    const urls = {
      service: await mf.unsafeGetDirectURL(SERVICE),
      baseline: await mf.unsafeGetDirectURL("bench-artifacts-baseline"),
    };
    const db = await migratedDb(mf);
    const ws = await signup(urls.service, "Artifact Bench");
    const auth = { authorization: `Bearer ${ws.token}` };

    // A conversation the bench user takes part in (the conversations API is another area's).
    const conversationId = randomUUID();
    const agent = await db.prepare("SELECT id FROM agents WHERE workspace_id = ?").bind(ws.workspaceId).first();
    const now = new Date().toISOString();
    await db.batch([
      db
        .prepare(
          "INSERT INTO conversations (id, workspace_id, title, mode, agent_id, created_by, created_at, last_message_at) VALUES (?, ?, 'bench', 'standard', ?, ?, ?, ?)",
        )
        .bind(conversationId, ws.workspaceId, agent.id, ws.userId, now, now),
      db
        .prepare(
          "INSERT INTO conversation_participants (conversation_id, user_id, workspace_id, last_message_at, added_at) VALUES (?, ?, ?, ?, ?)",
        )
        .bind(conversationId, ws.userId, ws.workspaceId, now, now),
    ]);

    // The 10 MiB object goes in through the real upload route (streamed multipart).
    const bytes = new Uint8Array(SIZE);
    for (let i = 0; i < SIZE; i += 4) bytes[i] = (i * 2654435761) >>> 24;
    const form = new FormData();
    form.append("file", new Blob([bytes], { type: "application/octet-stream" }), "bench.bin");
    const up = await fetch(new URL(`/v1/api/conversations/${conversationId}/artifacts`, urls.service), {
      method: "POST",
      headers: auth,
      body: form,
    });
    const artifact = await up.json();
    if (up.status !== 201) throw new Error(`upload failed: ${up.status} ${JSON.stringify(artifact)}`);
    const key = `artifacts/${ws.workspaceId}/${artifact.id}`;
    const target = {
      ours: new URL(`/v1/api/artifacts/${artifact.id}/download`, urls.service).href,
      baseline: new URL(`/get?key=${encodeURIComponent(key)}`, urls.baseline).href,
    };

    const sha = (buf) => createHash("sha256").update(buf).digest("hex");
    const expected = sha(bytes);
    for (const [name, url] of Object.entries(target)) {
      const res = await fetch(url, { headers: auth });
      const body = new Uint8Array(await res.arrayBuffer());
      check(res.status === 200, `${name}: answered ${res.status}`);
      check(body.length === SIZE && sha(body) === expected, `${name}: the body is not the uploaded 10 MiB`);
    }
    step(`uploaded ${SIZE / 1024 / 1024} MiB through the upload route; both targets serve it byte for byte`);

    step(
      `download: ${ROUNDS} alternating rounds of ${PER_ROUND} downloads per target, ${CONNECTIONS} at a time, after ${PER_ROUND} warm-up downloads each`,
    );
    const targets = [
      { name: "ours", url: target.ours, headers: auth },
      { name: "baseline", url: target.baseline, headers: {} },
    ];
    for (const t of targets) await downloads(t, PER_ROUND, check);
    const r = Object.fromEntries(targets.map((t) => [t.name, { seconds: 0, count: 0, rounds: [] }]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const t of targets) {
        const { seconds, count } = await downloads(t, PER_ROUND, check);
        r[t.name].seconds += seconds;
        r[t.name].count += count;
        r[t.name].rounds.push(count / seconds);
      }
    }
    for (const x of Object.values(r)) x.rps = x.count / x.seconds;
    for (const [name, x] of Object.entries(r))
      step(
        `  ${name}: ${x.rps.toFixed(1)} downloads/s = ${((x.rps * SIZE) / 1024 / 1024).toFixed(0)} MiB/s (rounds: ${x.rounds.map((v) => ((v * SIZE) / 1024 / 1024).toFixed(0)).join(", ")} MiB/s)`,
      );
    const mibps = (x) => `${((x.rps * SIZE) / 1024 / 1024).toFixed(0)} MiB/s`;
    return [
      {
        figure: "artifact download, 10 MiB",
        ours: mibps(r.ours),
        baseline: mibps(r.baseline),
        baselineName: "bare R2 get worker",
        ratio: r.ours.rps / r.baseline.rps,
        target: "≥ 0.90",
        pass: r.ours.rps / r.baseline.rps >= 0.9,
      },
      {
        figure: "download: our cost per request",
        ours: `${((1e3 / r.ours.rps - 1e3 / r.baseline.rps) * CONNECTIONS).toFixed(2)} ms`,
        baseline: `${((1e3 / r.baseline.rps) * CONNECTIONS).toFixed(2)} ms`,
        baselineName: "baseline's whole request",
        ratio: null,
      },
    ];
  },
};
