// Baselines for bench/suites/billing.mjs: the same D1 statements as the billing area, raw and
// prepared, with nothing around them: no router, no SDK, no validation.
//
//   GET /ledger?ws=<id>   the grant-and-balance batch of requireCredits, then the debit insert
//   POST /webhook         a checkout.session.completed (payment mode, paid): the Stripe
//                         signature checked with WebCrypto HMAC, then the statements of
//                         the webhook (src/billing/webhook*.ts: seen check, workspace and pack
//                         reads, the batch of event + account + customer link + ledger entry), the
//                         one AuditLog append the service makes for the credit

// The SQL that src/billing/ledger.ts and the webhook's Drizzle queries run, written by hand.
import { hex, uuidv7 } from "./common.mjs";

const GRANT_SQL = `INSERT INTO credit_ledger (id, workspace_id, amount, kind, reference, created_at)
  SELECT ?1, ?2, ?3, 'monthly_grant', ?4, ?5
  WHERE ?3 > 0 AND COALESCE((SELECT plan_slug FROM billing_accounts WHERE workspace_id = ?2), 'free') = 'free'
  ON CONFLICT DO NOTHING
  RETURNING id, amount, reference`;
const BALANCE_SQL = "SELECT COALESCE(SUM(amount), 0) AS balance FROM credit_ledger WHERE workspace_id = ?1";
const DEBIT_SQL = `INSERT INTO credit_ledger (id, workspace_id, amount, kind, reference, created_at)
  VALUES (?1, ?2, ?3, 'usage', ?4, ?5)
  ON CONFLICT DO NOTHING
  RETURNING id`;
const SEEN_SQL = "SELECT 1 AS one FROM stripe_events WHERE id = ?1";
const WORKSPACE_SQL = "SELECT id FROM workspaces WHERE id = ?1";
const PACK_SQL = "SELECT * FROM credit_packs WHERE slug = ?1";
const EVENT_SQL = "INSERT INTO stripe_events (id, type, workspace_id, received_at) VALUES (?1, ?2, ?3, ?4)";
const ACCOUNT_SQL = "INSERT INTO billing_accounts (workspace_id, updated_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING";
const LINK_SQL = `UPDATE billing_accounts SET stripe_customer_id = ?1, updated_at = ?2
  WHERE workspace_id = ?3 AND stripe_customer_id IS NULL
    AND NOT EXISTS (SELECT 1 FROM billing_accounts WHERE stripe_customer_id = ?1)
  RETURNING workspace_id`;
const LEDGER_SQL = `INSERT INTO credit_ledger (id, workspace_id, amount, kind, reference, created_at)
  VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING RETURNING id, amount`;

let keyPromise;
const hmacKey = (secret) =>
  (keyPromise ??= crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  ));

async function verified(request, env) {
  const header = request.headers.get("stripe-signature") ?? "";
  const payload = await request.text();
  const parts = Object.fromEntries(header.split(",").map((p) => p.split("=")));
  if (!parts.t || !parts.v1 || Math.abs(Date.now() / 1000 - Number(parts.t)) > 300) return null;
  const mac = new Uint8Array(
    await crypto.subtle.sign(
      "HMAC",
      await hmacKey(env.STRIPE_WEBHOOK_SECRET),
      new TextEncoder().encode(`${parts.t}.${payload}`),
    ),
  );
  return hex(mac) === parts.v1 ? JSON.parse(payload) : null;
}

async function ledger(url, env) {
  const ws = url.searchParams.get("ws");
  const now = new Date().toISOString();
  const [, sum] = await env.DB.batch([
    env.DB.prepare(GRANT_SQL).bind(uuidv7(), ws, 100, `free:${now.slice(0, 7)}`, now),
    env.DB.prepare(BALANCE_SQL).bind(ws),
  ]);
  const balance = sum.results[0]?.balance ?? 0;
  if (balance <= 0) return Response.json({ code: "insufficient_credits" }, { status: 402 });
  const row = await env.DB.prepare(DEBIT_SQL).bind(uuidv7(), ws, -1, crypto.randomUUID(), now).first();
  return Response.json({ balance, debited: row !== null });
}

async function webhook(request, env) {
  const event = await verified(request, env);
  if (!event) return Response.json({ code: "invalid_signature" }, { status: 400 });
  if (event.type !== "checkout.session.completed") return Response.json({ received: true, duplicate: false });
  if (await env.DB.prepare(SEEN_SQL).bind(event.id).first()) return Response.json({ received: true, duplicate: true });
  const session = event.data.object;
  const ws = (await env.DB.prepare(WORKSPACE_SQL).bind(session.client_reference_id).first())?.id;
  const pack = await env.DB.prepare(PACK_SQL).bind(session.metadata.pack_slug).first();
  const now = new Date().toISOString();
  const results = await env.DB.batch([
    env.DB.prepare(EVENT_SQL).bind(event.id, event.type, ws, now),
    env.DB.prepare(ACCOUNT_SQL).bind(ws, now),
    env.DB.prepare(LINK_SQL).bind(session.customer, now, ws),
    env.DB.prepare(LEDGER_SQL).bind(uuidv7(), ws, pack.credits, "topup", session.payment_intent, now),
  ]);
  const entry = results[3].results[0];
  if (entry)
    await env.AUDIT_LOG.getByName(ws).append([
      {
        kind: "billing.credit",
        outcome: "success",
        actorKind: "system",
        actorId: null,
        agentId: null,
        conversationId: null,
        target: `ledger:${entry.id}`,
        intent: "topup",
        subjectUserId: null,
        details: { ledger_kind: "topup", amount: entry.amount, reference: session.payment_intent, event_id: event.id },
        occurredAt: now,
      },
    ]);
  return Response.json({ received: true, duplicate: false });
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/ledger") return ledger(url, env);
    if (url.pathname === "/webhook" && request.method === "POST") return webhook(request, env);
    return new Response("not found", { status: 404 });
  },
};
