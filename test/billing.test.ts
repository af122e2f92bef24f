import { env } from "cloudflare:workers";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../src/app";
import {
  balance,
  debit,
  ensureMonthlyGrant,
  grantedBalance,
  monthlyGrantReference,
  requireCredits,
} from "../src/billing/ledger";
import {
  BillingStatusSchema,
  CreditsSchema,
  InsufficientCreditsProblemSchema,
  PackListSchema,
  PlanListSchema,
  RedirectSchema,
} from "../src/billing/schemas";
import { call, expectProblem, parse } from "./support/api";
import { callWith } from "./support/app";
import { auditEvents } from "./support/audit";
import { countingD1 } from "./support/d1-count";
import { fakeStripe, PRICES, STRIPE_ENV, stripeServer } from "./support/fake-stripe";
import { addUser, issueToken, signupWorkspace } from "./support/seed";

type Ws = Awaited<ReturnType<typeof signupWorkspace>>;

beforeAll(() => stripeServer.listen({ onUnhandledRequest: "error" }));
afterEach(() => fakeStripe.reset());
afterAll(() => stripeServer.close());

const billing = (method: string, path: string, token: string, body?: unknown) =>
  callWith(STRIPE_ENV, method, path, { token, body });

async function ledgerRows(workspaceId: string) {
  const { results } = await env.DB.prepare(
    "SELECT amount, kind, reference FROM credit_ledger WHERE workspace_id = ?1 ORDER BY id",
  )
    .bind(workspaceId)
    .all<{ amount: number; kind: string; reference: string }>();
  return results;
}

describe("who may call the billing routes", () => {
  let ws: Ws;
  let member: string;
  let reader: string;
  let adminReadOnly: string;
  beforeAll(async () => {
    ws = await signupWorkspace();
    member = (await addUser(ws.adminToken, "member", ["agents:read"])).token;
    reader = (await addUser(ws.adminToken, "member", ["billing:read"])).token;
    adminReadOnly = await issueToken(ws.adminToken, ws.user.id, ["billing:read"]);
  });

  const ALL = [
    ["GET", "/v1/api/billing/plans"],
    ["GET", "/v1/api/billing/packs"],
    ["GET", "/v1/api/billing"],
    ["GET", "/v1/api/billing/credits"],
    ["POST", "/v1/api/billing/checkout", { plan_slug: "pro" }],
    ["POST", "/v1/api/billing/portal"],
    ["POST", "/v1/api/billing/topup", { pack_slug: "credits-1000" }],
  ] as const;

  for (const [method, path, body] of ALL) {
    it(`${method} ${path}: 401 without a credential or with a bad one`, async () => {
      await expectProblem(await callWith(STRIPE_ENV, method, path, { body }), 401, "unauthenticated");
      await expectProblem(await billing(method, path, "svc_pat_nope", body), 401, "invalid_token");
    });
  }

  it("the catalogues take any valid token", async () => {
    expect((await billing("GET", "/v1/api/billing/plans", member)).status).toBe(200);
    expect((await billing("GET", "/v1/api/billing/packs", member)).status).toBe(200);
  });

  it("the billing state and credits need billing:read", async () => {
    for (const path of ["/v1/api/billing", "/v1/api/billing/credits"]) {
      await expectProblem(await billing("GET", path, member), 403, "insufficient_scope");
      expect((await billing("GET", path, reader)).status).toBe(200);
    }
  });

  it("checkout, portal and top-up need an admin with the admin scope; refusals reach no Stripe", async () => {
    for (const [method, path, body] of ALL.slice(4)) {
      await expectProblem(await billing(method, path, reader, body), 403, "admin_required");
      await expectProblem(await billing(method, path, adminReadOnly, body), 403);
    }
    expect(fakeStripe.requests).toEqual([]);
  });
});

describe("catalogues and state", () => {
  let ws: Ws;
  beforeAll(async () => {
    ws = await signupWorkspace();
  });

  it("plans and packs say which are priced; the free plan's credits come from FREE_MONTHLY_CREDITS", async () => {
    const res = await callWith({ ...STRIPE_ENV, FREE_MONTHLY_CREDITS: "250" }, "GET", "/v1/api/billing/plans", {
      token: ws.adminToken,
    });
    const { plans } = await parse(res, PlanListSchema);
    expect(plans).toEqual([
      { slug: "free", name: "Free", monthly_credits: 250, priced: false, active: true },
      { slug: "pro", name: "Pro", monthly_credits: 5000, priced: true, active: true },
      { slug: "team", name: "Team", monthly_credits: 25000, priced: false, active: true },
    ]);
    const { packs } = await parse(await billing("GET", "/v1/api/billing/packs", ws.adminToken), PackListSchema);
    expect(packs.map((p) => [p.slug, p.credits, p.priced])).toEqual([
      ["credits-1000", 1000, true],
      ["credits-5000", 5000, true],
      ["credits-20000", 20000, false],
    ]);
  });

  it("without STRIPE_PRICES nothing is priced, and a malformed value prices nothing", async () => {
    for (const overrides of [{}, { STRIPE_PRICES: "{not json" }]) {
      const res = await callWith(overrides, "GET", "/v1/api/billing/packs", { token: ws.adminToken });
      expect((await parse(res, PackListSchema)).packs.every((p) => !p.priced)).toBe(true);
    }
  });

  it("a new workspace is on the free plan with this month's free credits", async () => {
    const state = await parse(await call("GET", "/v1/api/billing", { token: ws.adminToken }), BillingStatusSchema);
    expect(state).toEqual({ plan: "free", status: "none", current_period_end: null, balance: 100, customer: false });
    const credits = await parse(await call("GET", "/v1/api/billing/credits", { token: ws.adminToken }), CreditsSchema);
    expect(credits.balance).toBe(100);
    expect(credits.entries).toMatchObject([
      { amount: 100, kind: "monthly_grant", reference: monthlyGrantReference(new Date()) },
    ]);
    const [grant] = await auditEvents(ws.workspace.id, "billing.credit");
    expect(grant).toMatchObject({ actor_kind: "system", intent: "grant", details: { ledger_kind: "monthly_grant" } });
  });

  it("credits lists newest first, clamps limit to 1-200 and refuses a non-integer", async () => {
    for (let i = 0; i < 3; i++) await debit(env, ws.workspace.id, 1, `turn-${i}`);
    const one = await parse(
      await call("GET", "/v1/api/billing/credits?limit=1", { token: ws.adminToken }),
      CreditsSchema,
    );
    expect(one.entries).toMatchObject([{ amount: -1, kind: "usage", reference: "turn-2" }]);
    const clamped = await parse(
      await call("GET", "/v1/api/billing/credits?limit=-5", { token: ws.adminToken }),
      CreditsSchema,
    );
    expect(clamped.entries).toHaveLength(1);
    const all = await parse(
      await call("GET", "/v1/api/billing/credits?limit=99999", { token: ws.adminToken }),
      CreditsSchema,
    );
    expect(all.entries.map((e) => e.reference)).toEqual([
      "turn-2",
      "turn-1",
      "turn-0",
      monthlyGrantReference(new Date()),
    ]);
    expect(all.balance).toBe(97);
    for (const limit of ["ten", "9007199254740992"])
      await expectProblem(
        await call("GET", `/v1/api/billing/credits?limit=${limit}`, { token: ws.adminToken }),
        400,
        "validation_failed",
      );
    expect((await call("GET", "/v1/api/billing/credits?limit=9007199254740991", { token: ws.adminToken })).status).toBe(
      200,
    );
  });
});

describe("the ledger service", () => {
  it("grants the free credits exactly once per month under concurrent first use", async () => {
    const ws = await signupWorkspace();
    const [balances, reads, grants] = await Promise.all([
      Promise.all(Array.from({ length: 8 }, () => grantedBalance(env, ws.workspace.id))),
      Promise.all(Array.from({ length: 4 }, () => call("GET", "/v1/api/billing", { token: ws.adminToken }))),
      Promise.all(Array.from({ length: 4 }, () => ensureMonthlyGrant(env, ws.workspace.id))),
    ]);
    expect(balances).toEqual(Array(8).fill(100));
    expect(reads.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(grants.filter((g) => g !== null).length).toBeLessThanOrEqual(1);
    const rows = await ledgerRows(ws.workspace.id);
    expect(rows).toEqual([{ amount: 100, kind: "monthly_grant", reference: monthlyGrantReference(new Date()) }]);
    expect(await auditEvents(ws.workspace.id, "billing.credit")).toHaveLength(1);
    // The next month grants again, once.
    const next = new Date(Date.UTC(2099, 0, 15));
    expect(await ensureMonthlyGrant(env, ws.workspace.id, next)).toMatchObject({ amount: 100 });
    expect(await ensureMonthlyGrant(env, ws.workspace.id, next)).toBeNull();
    expect(await balance(env, ws.workspace.id)).toBe(200);
  });

  it("makes no free grant to a workspace on a paid plan", async () => {
    const ws = await signupWorkspace();
    await env.DB.prepare(
      "INSERT INTO billing_accounts (workspace_id, plan_slug, status, updated_at) VALUES (?1, 'pro', 'active', ?2)",
    )
      .bind(ws.workspace.id, new Date().toISOString())
      .run();
    expect(await ensureMonthlyGrant(env, ws.workspace.id)).toBeNull();
    expect(await balance(env, ws.workspace.id)).toBe(0);
  });

  it("debit is idempotent on its reference, and concurrent debits never lose an entry", async () => {
    const ws = await signupWorkspace();
    expect(await debit(env, ws.workspace.id, 7, "turn-a")).toEqual({ debited: true });
    expect(await debit(env, ws.workspace.id, 7, "turn-a")).toEqual({ debited: false });
    const outcomes = await Promise.all(
      Array.from({ length: 30 }, (_, i) => debit(env, ws.workspace.id, 2, `turn-${i % 20}`)),
    );
    expect(outcomes.filter((o) => o.debited)).toHaveLength(20);
    expect(await balance(env, ws.workspace.id)).toBe(-7 - 40);
    await expect(debit(env, ws.workspace.id, 0, "x")).rejects.toMatchObject({ status: 400, code: "invalid_amount" });
    await expect(debit(env, ws.workspace.id, 1.5, "x")).rejects.toMatchObject({ status: 400 });
    await expect(debit(env, ws.workspace.id, 1, "")).rejects.toMatchObject({ code: "invalid_reference" });
  });

  it("keeps each workspace's balance in one row, whoever writes the ledger: inserts, refused repeats, deletes, edits", async () => {
    const ws = await signupWorkspace();
    const other = await signupWorkspace();
    const w = ws.workspace.id;
    const row = async (id: string) =>
      (
        await env.DB.prepare("SELECT balance FROM credit_balances WHERE workspace_id = ?1")
          .bind(id)
          .first<{ balance: number }>()
      )?.balance;
    const summed = async (id: string) =>
      (await env.DB.prepare("SELECT COALESCE(SUM(amount), 0) AS s FROM credit_ledger WHERE workspace_id = ?1")
        .bind(id)
        .first<{ s: number }>())!.s;
    const insert = (id: string, workspaceId: string, amount: number, reference: string) =>
      env.DB.prepare(
        "INSERT INTO credit_ledger (id, workspace_id, amount, kind, reference, created_at) VALUES (?1, ?2, ?3, 'adjustment', ?4, '2026-11-27T00:00:00.000Z') ON CONFLICT DO NOTHING",
      )
        .bind(id, workspaceId, amount, reference)
        .run();
    expect(await row(w)).toBeUndefined();
    expect(await balance(env, w)).toBe(0);
    await ensureMonthlyGrant(env, w);
    await debit(env, w, 7, "turn-a");
    await debit(env, w, 7, "turn-a");
    await insert(`adj-${w}`, w, 500, "by-hand");
    await insert(`adj2-${w}`, w, 9, "by-hand"); // the same (workspace, kind, reference): not written
    await insert(`adj-${other.workspace.id}`, other.workspace.id, 3, "by-hand");
    expect(await row(w)).toBe(100 - 7 + 500);
    await env.DB.prepare("UPDATE credit_ledger SET amount = 40 WHERE id = ?1").bind(`adj-${w}`).run();
    await env.DB.prepare("DELETE FROM credit_ledger WHERE workspace_id = ?1 AND reference = 'turn-a'").bind(w).run();
    expect(await row(w)).toBe(100 + 40);
    expect(await balance(env, w)).toBe(await summed(w));
    expect(await row(other.workspace.id)).toBe(3);
    expect(await grantedBalance(env, other.workspace.id)).toBe(103);
  });

  it("migration 0021 fills the balances from the ledger that was there before it", async () => {
    const ws = await signupWorkspace();
    await ensureMonthlyGrant(env, ws.workspace.id);
    await debit(env, ws.workspace.id, 12, "turn-before");
    const fill = env.TEST_MIGRATIONS.find((m) => m.name.startsWith("0021_"))!.queries.find((q) =>
      /INSERT INTO `credit_balances`/.test(q),
    )!;
    const all = async () =>
      (await env.DB.prepare("SELECT workspace_id, balance FROM credit_balances ORDER BY workspace_id").all()).results;
    const before = await all();
    await env.DB.batch([env.DB.prepare("DELETE FROM credit_balances"), env.DB.prepare(fill)]);
    expect(await all()).toEqual(before);
    expect(await balance(env, ws.workspace.id)).toBe(100 - 12);
  });

  it("requireCredits reads; only the month's first check makes the grant, in a round trip of its own", async () => {
    const ws = await signupWorkspace();
    const d1 = countingD1();
    expect(await requireCredits(d1.env, ws.workspace.id)).toBe(100);
    expect(d1.take()).toBe(2);
    expect(await requireCredits(d1.env, ws.workspace.id)).toBe(100);
    expect(d1.take()).toBe(1);
    // A workspace off the free plan is due no grant: its check is the read alone.
    const paid = await signupWorkspace();
    await env.DB.prepare(
      "INSERT INTO billing_accounts (workspace_id, plan_slug, updated_at) VALUES (?1, 'team', '2026-11-01T00:00:00.000Z')",
    )
      .bind(paid.workspace.id)
      .run();
    await debit(env, paid.workspace.id, 1, "before-the-check");
    await expect(requireCredits(d1.env, paid.workspace.id)).rejects.toMatchObject({ status: 402 });
    expect(d1.take()).toBe(2); // the read, and the packs the 402 lists
    expect(await balance(env, paid.workspace.id)).toBe(-1);
  });

  it("requireCredits passes with credits and answers the 402 problem with balance and packs when none are left", async () => {
    const ws = await signupWorkspace();
    expect(await requireCredits(env, ws.workspace.id)).toBe(100);
    await debit(env, ws.workspace.id, 100, "big-turn");
    // The route a paid action would have, rendered by the app's real error handler.
    const app = createApp();
    app.get("/test/paid-action", async (c) => {
      await requireCredits(c.env, ws.workspace.id);
      return c.json({ ran: true });
    });
    const res = await app.request("/test/paid-action", {}, { ...env, ...STRIPE_ENV });
    expect(res.status).toBe(402);
    expect(res.headers.get("Content-Type")).toMatch(/^application\/problem\+json/);
    const body = InsufficientCreditsProblemSchema.parse(await res.json());
    expect(body).toMatchObject({ status: 402, title: "Payment Required", code: "insufficient_credits", balance: 0 });
    expect(body.packs.map((p) => [p.slug, p.credits, p.priced])).toEqual([
      ["credits-1000", 1000, true],
      ["credits-5000", 5000, true],
      ["credits-20000", 20000, false],
    ]);
  });
});

describe("POST /v1/api/billing/checkout, /portal and /topup", () => {
  let ws: Ws;
  beforeAll(async () => {
    ws = await signupWorkspace();
  });

  it("answer 503 billing_not_configured without STRIPE_SECRET_KEY", async () => {
    await expectProblem(
      await call("POST", "/v1/api/billing/checkout", { token: ws.adminToken, body: { plan_slug: "pro" } }),
      503,
      "billing_not_configured",
    );
    await expectProblem(await call("POST", "/v1/api/billing/portal", { token: ws.adminToken }), 503);
    await expectProblem(
      await call("POST", "/v1/api/billing/topup", { token: ws.adminToken, body: { pack_slug: "credits-1000" } }),
      503,
      "billing_not_configured",
    );
  });

  it("checkout refuses unknown, inactive, free and unpriced plans, and bad bodies", async () => {
    await env.DB.prepare(
      "INSERT OR IGNORE INTO plans (slug, name, monthly_credits, active, position, created_at) VALUES ('legacy', 'Legacy', 1, 0, 9, ?1)",
    )
      .bind(new Date().toISOString())
      .run();
    const pricedLegacy = { ...STRIPE_ENV, STRIPE_PRICES: JSON.stringify({ ...PRICES, legacy: "price_legacy" }) };
    const checkout = (plan_slug: unknown, overrides: Record<string, unknown> = STRIPE_ENV) =>
      callWith(overrides, "POST", "/v1/api/billing/checkout", { token: ws.adminToken, body: { plan_slug } });
    await expectProblem(await checkout("platinum"), 404, "plan_not_found");
    await expectProblem(await checkout("legacy", pricedLegacy), 400, "plan_inactive");
    await expectProblem(await checkout("free"), 400, "plan_not_priced");
    await expectProblem(await checkout("team"), 400, "plan_not_priced");
    await expectProblem(await checkout(42), 400, "validation_failed");
    await expectProblem(
      await callWith(STRIPE_ENV, "POST", "/v1/api/billing/checkout", {
        token: ws.adminToken,
        body: { plan_slug: "pro", coupon: "x" },
      }),
      400,
      "validation_failed",
    );
    expect(fakeStripe.requests).toEqual([]);
  });

  it("checkout creates the customer, then a subscription-mode session naming the workspace", async () => {
    const res = await billing("POST", "/v1/api/billing/checkout", ws.adminToken, { plan_slug: "pro" });
    const { url } = await parse(res, RedirectSchema);
    expect(url).toMatch(/^https:\/\/checkout\.stripe\.com\/c\/pay\/cs_test_/);
    const [customer] = fakeStripe.posts("/v1/customers");
    expect(customer!.idempotencyKey).toBe(`customer:${ws.workspace.id}`);
    expect(Object.fromEntries(customer!.form)).toEqual({ "metadata[workspace_id]": ws.workspace.id });
    const [session] = fakeStripe.posts("/v1/checkout/sessions");
    expect(session!.idempotencyKey).toMatch(new RegExp(`^checkout:${ws.workspace.id}:.+`));
    const stored = await env.DB.prepare("SELECT stripe_customer_id AS id FROM billing_accounts WHERE workspace_id = ?1")
      .bind(ws.workspace.id)
      .first<{ id: string }>();
    expect(Object.fromEntries(session!.form)).toMatchObject({
      mode: "subscription",
      customer: stored!.id,
      client_reference_id: ws.workspace.id,
      "line_items[0][price]": PRICES.pro,
      "line_items[0][quantity]": "1",
      "metadata[workspace_id]": ws.workspace.id,
      "metadata[plan_slug]": "pro",
      "subscription_data[metadata][workspace_id]": ws.workspace.id,
      success_url: "https://svc.test/?checkout=success",
    });
    // Nothing is provisioned by the checkout itself.
    const state = await parse(await billing("GET", "/v1/api/billing", ws.adminToken), BillingStatusSchema);
    expect(state).toMatchObject({ plan: "free", customer: true });
    const checkouts = await auditEvents(ws.workspace.id, "billing.checkout");
    expect(checkouts[0]).toMatchObject({ target: "plan:pro", intent: "checkout", outcome: "success" });
    expect(checkouts[0]!.details).toEqual({ plan_slug: "pro", session_id: expect.stringMatching(/^cs_test_/) });
    expect(await auditEvents(ws.workspace.id, "billing.customer")).toHaveLength(1);
  });

  it("the portal reuses the customer and returns Stripe's portal URL", async () => {
    const { url } = await parse(await billing("POST", "/v1/api/billing/portal", ws.adminToken), RedirectSchema);
    expect(url).toMatch(/^https:\/\/billing\.stripe\.com\/p\/session\//);
    expect(fakeStripe.posts("/v1/customers")).toEqual([]);
    const [portal] = fakeStripe.posts("/v1/billing_portal/sessions");
    expect(portal!.idempotencyKey).toMatch(new RegExp(`^portal:${ws.workspace.id}:`));
    expect(portal!.form.get("customer")).toMatch(/^cus_test_/);
    expect(portal!.form.get("return_url")).toBe("https://svc.test/");
    expect(await auditEvents(ws.workspace.id, "billing.portal")).toHaveLength(1);
  });

  it("top-up: 404 unknown pack, 400 unpriced pack, else a payment-mode session on any plan", async () => {
    await expectProblem(
      await billing("POST", "/v1/api/billing/topup", ws.adminToken, { pack_slug: "credits-7" }),
      404,
      "pack_not_found",
    );
    await expectProblem(
      await billing("POST", "/v1/api/billing/topup", ws.adminToken, { pack_slug: "credits-20000" }),
      400,
      "pack_not_priced",
    );
    const { url } = await parse(
      await billing("POST", "/v1/api/billing/topup", ws.adminToken, { pack_slug: "credits-5000" }),
      RedirectSchema,
    );
    expect(url).toMatch(/^https:\/\/checkout\.stripe\.com\//);
    const [session] = fakeStripe.posts("/v1/checkout/sessions");
    expect(session!.idempotencyKey).toMatch(new RegExp(`^topup:${ws.workspace.id}:`));
    expect(Object.fromEntries(session!.form)).toMatchObject({
      mode: "payment",
      client_reference_id: ws.workspace.id,
      "line_items[0][price]": PRICES["credits-5000"],
      "metadata[pack_slug]": "credits-5000",
      "payment_intent_data[metadata][workspace_id]": ws.workspace.id,
      "payment_intent_data[metadata][pack_slug]": "credits-5000",
    });
    const [topup] = await auditEvents(ws.workspace.id, "billing.topup");
    expect(topup).toMatchObject({ target: "pack:credits-5000", intent: "topup" });
  });

  it("concurrent first requests create one customer per workspace", async () => {
    const fresh = await signupWorkspace();
    const responses = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        i % 2
          ? billing("POST", "/v1/api/billing/portal", fresh.adminToken)
          : billing("POST", "/v1/api/billing/topup", fresh.adminToken, { pack_slug: "credits-1000" }),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const keys = new Set(fakeStripe.posts("/v1/customers").map((r) => r.idempotencyKey));
    expect([...keys]).toEqual([`customer:${fresh.workspace.id}`]);
    const used = new Set(
      [...fakeStripe.posts("/v1/checkout/sessions"), ...fakeStripe.posts("/v1/billing_portal/sessions")].map((r) =>
        r.form.get("customer"),
      ),
    );
    expect(used.size).toBe(1);
    expect(await auditEvents(fresh.workspace.id, "billing.customer")).toHaveLength(1);
  });

  it("a failure at Stripe is a 502 problem, never a 500", async () => {
    fakeStripe.failWith = 500;
    const res = await billing("POST", "/v1/api/billing/topup", ws.adminToken, { pack_slug: "credits-1000" });
    await expectProblem(res, 502, "payment_provider_error");
  });
});
