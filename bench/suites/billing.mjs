// The billing area's figures, each beside a raw-D1 baseline in its own workerd and in
// alternating rounds:
//   - webhook throughput: signed checkout.session.completed events (payment mode, paid), all
//     distinct, into the service's POST /v1/webhooks/stripe;
//   - a paid action's ledger cost: requireCredits then debit, through the service's own
//     src/billing/ledger.ts bundled into a driver Worker.
import { createHmac, randomUUID } from "node:crypto";
import {
  baselineModules,
  besideService,
  bundleDriver,
  d1IdOf,
  driverModules,
  envNumber,
  SERVICE,
  serviceWorker,
  wranglerConfig,
} from "../lib/harness.mjs";
import { measureAlternating } from "../lib/load.mjs";
import { throughputRows } from "../lib/report.mjs";
import { creditWorkspace, migratedDb, signup } from "../lib/seed.mjs";

const SECONDS = envNumber("BENCH_SECONDS", 3);
const ROUNDS = envNumber("BENCH_ROUNDS", 3);
const CONNECTIONS = envNumber("BENCH_CONNECTIONS", 32);
const WEBHOOK_SECRET = "whsec_bench_secret";

export default {
  name: "billing",
  description: "Stripe webhook and requireCredits + debit, each vs a raw D1 baseline Worker",
  byDefault: false,
  async run(ctx) {
    const { check, step } = ctx;
    const bundle = ctx.bundle();
    step("bundling the ledger driver (esbuild)");
    const driverFile = bundleDriver("billing-ledger-driver.ts");

    const config = wranglerConfig();
    const common = {
      ...besideService(config),
      d1Databases: { DB: d1IdOf(config) },
      durableObjects: { AUDIT_LOG: { className: "AuditLog", scriptName: SERVICE, useSQLite: true } },
    };
    const mf = await ctx.start([
      serviceWorker(bundle, config, {
        // The webhook's payment-mode path makes no Stripe API call; the key only enables billing.
        STRIPE_SECRET_KEY: "sk_test_bench",
        STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
      }),
      {
        ...common,
        name: "bench-billing-baseline",
        ...baselineModules("billing-baseline-worker.mjs"),
        bindings: { STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET },
      },
      {
        ...common,
        name: "bench-billing-ledger",
        ...driverModules(driverFile),
      },
    ]);
    const urls = {
      service: await mf.unsafeGetDirectURL(SERVICE),
      baseline: await mf.unsafeGetDirectURL("bench-billing-baseline"),
      ledger: await mf.unsafeGetDirectURL("bench-billing-ledger"),
    };
    const db = await migratedDb(mf);

    // One workspace per target, so neither reads the other's rows.
    const ws = {};
    for (const name of ["ledgerOurs", "ledgerBase", "hookOurs", "hookBase"])
      ws[name] = await signup(urls.service, name);
    const now = new Date().toISOString();
    for (const name of ["ledgerOurs", "ledgerBase"]) await creditWorkspace(db, ws[name].workspaceId);
    const customers = {};
    for (const name of ["hookOurs", "hookBase"]) {
      customers[name] = `cus_bench_${name}`;
      await db
        .prepare("INSERT INTO billing_accounts (workspace_id, stripe_customer_id, updated_at) VALUES (?, ?, ?)")
        .bind(ws[name].workspaceId, customers[name], now)
        .run();
    }
    step("seeded 4 workspaces; checking that each target does the work");

    /** A signed, never-seen checkout.session.completed for the workspace. */
    const signedEvent = (name) => {
      const payload = JSON.stringify({
        id: `evt_bench_${randomUUID()}`,
        object: "event",
        api_version: "2026-10-28.endive",
        created: Math.floor(Date.now() / 1000),
        type: "checkout.session.completed",
        livemode: false,
        pending_webhooks: 1,
        request: { id: null, idempotency_key: null },
        data: {
          object: {
            id: `cs_bench_${randomUUID()}`,
            object: "checkout.session",
            mode: "payment",
            customer: customers[name],
            client_reference_id: ws[name].workspaceId,
            metadata: { workspace_id: ws[name].workspaceId, pack_slug: "credits-1000" },
            payment_intent: `pi_bench_${randomUUID()}`,
            payment_status: "paid",
            status: "complete",
          },
        },
      });
      const t = Math.floor(Date.now() / 1000);
      const v1 = createHmac("sha256", WEBHOOK_SECRET).update(`${t}.${payload}`).digest("hex");
      return { body: payload, headers: { "content-type": "application/json", "stripe-signature": `t=${t},v1=${v1}` } };
    };
    const hookUrl = {
      hookOurs: new URL("/v1/webhooks/stripe", urls.service).href,
      hookBase: new URL("/webhook", urls.baseline).href,
    };
    const ledgerUrl = {
      ledgerOurs: new URL(`/ledger?ws=${ws.ledgerOurs.workspaceId}`, urls.ledger).href,
      ledgerBase: new URL(`/ledger?ws=${ws.ledgerBase.workspaceId}`, urls.baseline).href,
    };

    for (const name of ["hookOurs", "hookBase"]) {
      const e = signedEvent(name);
      const res = await fetch(hookUrl[name], { method: "POST", headers: e.headers, body: e.body });
      const body = await res.json();
      check(
        res.status === 200 && body.duplicate === false,
        `${name}: webhook answered ${res.status} ${JSON.stringify(body)}`,
      );
      const replay = await (await fetch(hookUrl[name], { method: "POST", headers: e.headers, body: e.body })).json();
      check(replay.duplicate === true, `${name}: a replay was not recognised`);
      const bad = await fetch(hookUrl[name], {
        method: "POST",
        headers: { ...e.headers, "stripe-signature": "t=1,v1=00" },
        body: e.body,
      });
      check(bad.status === 400, `${name}: a bad signature got ${bad.status}`);
    }
    for (const name of ["ledgerOurs", "ledgerBase"]) {
      const res = await fetch(ledgerUrl[name]);
      const body = await res.json();
      check(
        res.status === 200 && body.debited === true,
        `${name}: ledger answered ${res.status} ${JSON.stringify(body)}`,
      );
    }

    const webhookTarget = (name) => ({
      name,
      url: hookUrl[name],
      connections: CONNECTIONS,
      prepare: () => ({
        requests: [{ method: "POST", setupRequest: (req) => ({ ...req, ...signedEvent(name) }) }],
      }),
    });
    step(`webhook: ${ROUNDS} alternating rounds × ${SECONDS} s, ${CONNECTIONS} connections, distinct signed events`);
    const hooks = await measureAlternating([webhookTarget("hookOurs"), webhookTarget("hookBase")], {
      rounds: ROUNDS,
      seconds: SECONDS,
    });
    step(`ledger: ${ROUNDS} alternating rounds × ${SECONDS} s, ${CONNECTIONS} connections`);
    const ledgers = await measureAlternating(
      ["ledgerOurs", "ledgerBase"].map((name) => ({ name, url: ledgerUrl[name], connections: CONNECTIONS })),
      { rounds: ROUNDS, seconds: SECONDS },
    );
    for (const [name, r] of Object.entries({ ...hooks, ...ledgers })) {
      check(r.failures === 0, `${name}: ${r.failures} failed requests`);
      step(`  ${name}: ${Math.round(r.rps)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms, ${r.failures} failures`);
    }

    // Every processed event credited exactly once, and every debit is in the ledger.
    for (const name of ["hookOurs", "hookBase"]) {
      const row = await db
        .prepare(
          `SELECT (SELECT count(*) FROM stripe_events WHERE workspace_id = ?1) AS events,
                  (SELECT count(*) FROM credit_ledger WHERE workspace_id = ?1 AND kind = 'topup') AS topups`,
        )
        .bind(ws[name].workspaceId)
        .first();
      check(row.events === row.topups && row.events > 0, `${name}: ${row.events} events but ${row.topups} top-ups`);
      step(`  ${name}: ${row.events} events, ${row.topups} top-ups`);
    }

    return [
      ...throughputRows(
        ["Stripe webhook (distinct signed events)", "webhook: our cost per request"],
        hooks.hookOurs,
        hooks.hookBase,
        "raw D1 + HMAC worker",
        0.8,
      ),
      ...throughputRows(
        ["requireCredits + debit", "ledger: our cost per request"],
        ledgers.ledgerOurs,
        ledgers.ledgerBase,
        "raw D1 worker",
        0.8,
      ),
    ];
  },
};
