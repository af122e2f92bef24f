// Inbound mail throughput. Messages per second through the service's inbound path (route the
// address, store the raw bytes in R2, the message row and its audit event in one D1 batch, the
// triage job on the queue) against a baseline handler that only stores the raw bytes in R2;
// both in one workerd of the suite's own, alternating rounds.
import {
  besideService,
  bundleDriver,
  driverModules,
  envNumber,
  SERVICE,
  serviceWorker,
  wranglerConfig,
} from "../lib/harness.mjs";
import { measureAlternating } from "../lib/load.mjs";
import { cpuRow } from "../lib/report.mjs";
import { migratedDb, signup } from "../lib/seed.mjs";

const SECONDS = envNumber("BENCH_SECONDS", 3);
const ROUNDS = envNumber("BENCH_ROUNDS", 3);
const CONNECTIONS = envNumber("BENCH_CONNECTIONS", 16);

export default {
  name: "email",
  description: "inbound mail through the service's inbound path vs raw bytes to R2 only",
  byDefault: false,
  async run(ctx) {
    const { check, step } = ctx;
    const bundle = ctx.bundle();
    step("bundling the email driver (esbuild)");
    const driverFile = bundleDriver("email-driver.ts");

    const config = wranglerConfig();
    const mf = await ctx.start([
      serviceWorker(bundle, config),
      {
        ...besideService(config),
        name: "bench-email-driver",
        ...driverModules(driverFile),
        bindings: { EMAIL_DOMAIN: "mail.localhost" },
        d1Databases: config.d1Databases,
        r2Buckets: config.r2Buckets,
        // The job is queued as in the service; nothing consumes it during the bench.
        queueProducers: { EMAIL_TRIAGE: "email-triage-bench" },
        durableObjects: { AUDIT_LOG: { className: "AuditLog", scriptName: SERVICE, useSQLite: true } },
      },
    ]);
    const urls = {
      service: await mf.unsafeGetDirectURL(SERVICE),
      driver: await mf.unsafeGetDirectURL("bench-email-driver"),
    };
    const db = await migratedDb(mf);
    const ws = await signup(urls.service, "Mail Bench");
    const slug = (await db.prepare("SELECT email_slug FROM workspaces WHERE id = ?").bind(ws.workspaceId).first())
      .email_slug;
    const to = `team-${slug}@mail.localhost`;
    let n = 0;
    const message = () =>
      [
        "From: Ada <ada@sender.test>",
        `To: ${to}`,
        `Subject: Order ${n}`,
        `Message-ID: <bench-${n++}@sender.test>`,
        "MIME-Version: 1.0",
        "Content-Type: text/plain; charset=utf-8",
        "",
        "When will my order ship? ".repeat(40),
      ].join("\r\n");
    const url = (mode) => new URL(`/${mode}?${new URLSearchParams({ to })}`, urls.driver).href;

    for (const mode of ["receive", "baseline"]) {
      const res = await fetch(url(mode), { method: "POST", body: message() });
      check(res.status === 200, `${mode}: answered ${res.status} ${await res.text()}`);
    }
    const target = (mode) => ({
      name: mode,
      url: url(mode),
      connections: CONNECTIONS,
      prepare: () => ({ requests: [{ method: "POST", setupRequest: (req) => ({ ...req, body: message() }) }] }),
      // The audit delivery of ours runs in 100 ms rounds after the answers.
      settleMs: 500,
    });
    step(`inbound mail vs raw-bytes-only: ${ROUNDS} alternating rounds × ${SECONDS} s, ${CONNECTIONS} connections`);
    const r = await measureAlternating([target("receive"), target("baseline")], { rounds: ROUNDS, seconds: SECONDS });
    for (const [name, x] of Object.entries(r)) {
      check(x.failures === 0, `${name}: ${x.failures} failed requests`);
      step(
        `  ${name}: ${Math.round(x.rps)} msg/s, p50 ${x.p50} ms, p99 ${x.p99} ms, ${x.failures} failures, ${Math.round(x.cpuUs ?? 0)} µs CPU a message`,
      );
    }
    const stored = await db
      .prepare("SELECT count(*) AS n FROM email_messages WHERE workspace_id = ? AND handling_state = 'received'")
      .bind(ws.workspaceId)
      .first();
    check(stored.n > 0, "no message row was stored");
    step(`  ${stored.n} message rows stored`);

    return [
      {
        figure: "inbound email → row + queued job",
        ours: r.receive.rps,
        baseline: r.baseline.rps,
        baselineName: "raw bytes to R2 only",
        unit: "/s",
        ratio: r.receive.rps / r.baseline.rps,
        target: "≥ 0.50",
        pass: r.receive.rps / r.baseline.rps >= 0.5,
      },
      cpuRow("inbound email: CPU a message", r.receive, r.baseline, "raw bytes to R2 only", 0.5),
    ].filter(Boolean);
  },
};
