import { env } from "cloudflare:workers";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { balance } from "../src/billing/ledger";
import { BillingStatusSchema, WebhookAckSchema } from "../src/billing/schemas";
import { call, expectProblem, parse } from "./support/api";
import { auditEvents } from "./support/audit";
import {
  deliver,
  fakeStripe,
  newStripeId,
  PRICES,
  postWebhook,
  sign,
  stripeEvent,
  stripeServer,
  subscription,
} from "./support/fake-stripe";
import { signupWorkspace } from "./support/seed";

type Ws = Awaited<ReturnType<typeof signupWorkspace>>;

beforeAll(() => stripeServer.listen({ onUnhandledRequest: "error" }));
afterEach(() => fakeStripe.reset());
afterAll(() => stripeServer.close());

async function ledger(workspaceId: string, kind?: string) {
  const { results } = await env.DB.prepare(
    "SELECT amount, kind, reference FROM credit_ledger WHERE workspace_id = ?1 AND (?2 IS NULL OR kind = ?2) ORDER BY id",
  )
    .bind(workspaceId, kind ?? null)
    .all<{ amount: number; kind: string; reference: string }>();
  return results;
}

async function state(ws: Ws) {
  return parse(await call("GET", "/v1/api/billing", { token: ws.adminToken }), BillingStatusSchema);
}

/** A workspace with a stored Stripe customer, as the checkout would leave it. */
async function customerWorkspace() {
  const ws = await signupWorkspace();
  const customer = newStripeId("cus");
  await env.DB.prepare(
    "INSERT INTO billing_accounts (workspace_id, stripe_customer_id, updated_at) VALUES (?1, ?2, ?3)",
  )
    .bind(ws.workspace.id, customer, new Date().toISOString())
    .run();
  return { ws, customer };
}

function paymentSession(ws: Ws, customer: string, opts: { pack?: string; paid?: boolean; intent?: string } = {}) {
  const pack = opts.pack ?? "credits-1000";
  return {
    id: newStripeId("cs"),
    object: "checkout.session",
    mode: "payment",
    customer,
    client_reference_id: ws.workspace.id,
    metadata: { workspace_id: ws.workspace.id, pack_slug: pack },
    payment_intent: opts.intent ?? newStripeId("pi"),
    payment_status: opts.paid === false ? "unpaid" : "paid",
    status: "complete",
    livemode: false,
  };
}

async function ok(res: Response) {
  const text = await res.text();
  if (res.status !== 200) throw new Error(`expected 200, got ${res.status}: ${text}`);
  return WebhookAckSchema.parse(JSON.parse(text));
}

describe("POST /v1/webhooks/stripe: authenticity", () => {
  let ws: Ws;
  let customer: string;
  beforeAll(async () => {
    ({ ws, customer } = await customerWorkspace());
  });

  it("answers 503 billing_not_configured without the Stripe secrets", async () => {
    const payload = JSON.stringify(stripeEvent("invoice.paid", {}));
    await expectProblem(await postWebhook(payload, await sign(payload), {}), 503, "billing_not_configured");
  });

  it("refuses a missing, malformed or wrong-secret signature and a tampered body with 400, changing nothing", async () => {
    const event = stripeEvent("checkout.session.completed", paymentSession(ws, customer));
    const payload = JSON.stringify(event);
    await expectProblem(await postWebhook(payload, null), 400, "invalid_signature");
    await expectProblem(await postWebhook(payload, "t=1,v1=deadbeef"), 400, "invalid_signature");
    await expectProblem(
      await postWebhook(payload, await sign(payload, "whsec_someone_else")),
      400,
      "invalid_signature",
    );
    const tampered = payload.replace('"credits-1000"', '"credits-20000"');
    expect(tampered).not.toBe(payload);
    await expectProblem(await postWebhook(tampered, await sign(payload)), 400, "invalid_signature");
    expect(await ledger(ws.workspace.id, "topup")).toEqual([]);
    expect(fakeStripe.requests).toEqual([]);
  });

  it("acknowledges an unknown event kind with 200 and does nothing", async () => {
    const res = await deliver(stripeEvent("customer.created", { id: customer, object: "customer" }));
    expect(await ok(res)).toEqual({ received: true, duplicate: false });
    expect(fakeStripe.requests).toEqual([]);
  });
});

describe("top-ups", () => {
  let ws: Ws;
  let customer: string;
  beforeEach(async () => {
    ({ ws, customer } = await customerWorkspace());
  });

  it("a paid payment-mode checkout credits the pack once, however often the event arrives (sequentially)", async () => {
    const session = paymentSession(ws, customer, { pack: "credits-5000" });
    const event = stripeEvent("checkout.session.completed", session);
    const acks = [];
    for (let i = 0; i < 5; i++) acks.push(await ok(await deliver(event)));
    expect(acks.map((a) => a.duplicate)).toEqual([false, true, true, true, true]);
    expect(await ledger(ws.workspace.id, "topup")).toEqual([
      { amount: 5000, kind: "topup", reference: session.payment_intent },
    ]);
    const credits = await auditEvents(ws.workspace.id, "billing.credit");
    expect(credits.filter((e) => e.intent === "topup")).toHaveLength(1);
    expect(credits[0]).toMatchObject({
      actor_kind: "system",
      actor_id: null,
      details: { ledger_kind: "topup", amount: 5000, pack_slug: "credits-5000", event_id: event.id },
    });
  });

  it("the same event delivered 5 times concurrently credits once", async () => {
    const event = stripeEvent("checkout.session.completed", paymentSession(ws, customer));
    const payload = JSON.stringify(event);
    const signature = await sign(payload);
    const responses = await Promise.all(Array.from({ length: 5 }, () => postWebhook(payload, signature)));
    const acks = await Promise.all(responses.map(ok));
    expect(acks.filter((a) => !a.duplicate)).toHaveLength(1);
    expect(await ledger(ws.workspace.id, "topup")).toHaveLength(1);
    expect(await balance(env, ws.workspace.id)).toBe(1000);
  });

  it("distinct events of the same session credit once (the reference is the payment)", async () => {
    const session = paymentSession(ws, customer);
    await ok(await deliver(stripeEvent("checkout.session.completed", session)));
    await ok(await deliver(stripeEvent("checkout.session.async_payment_succeeded", session)));
    expect(await ledger(ws.workspace.id, "topup")).toHaveLength(1);
  });

  it("an unpaid payment-mode checkout credits nothing until async_payment_succeeded", async () => {
    const unpaid = paymentSession(ws, customer, { paid: false });
    await ok(await deliver(stripeEvent("checkout.session.completed", unpaid)));
    expect(await ledger(ws.workspace.id, "topup")).toEqual([]);
    await ok(
      await deliver(stripeEvent("checkout.session.async_payment_succeeded", { ...unpaid, payment_status: "paid" })),
    );
    expect(await ledger(ws.workspace.id, "topup")).toEqual([
      { amount: 1000, kind: "topup", reference: unpaid.payment_intent },
    ]);
  });

  it("a refund after a top-up takes the credits back in proportion, once per refunded amount", async () => {
    const session = paymentSession(ws, customer, { pack: "credits-5000" });
    await ok(await deliver(stripeEvent("checkout.session.completed", session)));
    const charge = {
      id: newStripeId("ch"),
      object: "charge",
      amount: 4000,
      customer,
      payment_intent: session.payment_intent,
      metadata: {},
      refunded: false,
    };
    const partial = stripeEvent("charge.refunded", { ...charge, amount_refunded: 1000 });
    await ok(await deliver(partial));
    await ok(await deliver(partial));
    await ok(await deliver(stripeEvent("charge.refunded", { ...charge, amount_refunded: 1000 })));
    expect((await ledger(ws.workspace.id, "refund")).map((e) => e.amount)).toEqual([-1250]);
    await ok(await deliver(stripeEvent("charge.refunded", { ...charge, amount_refunded: 4000, refunded: true })));
    expect((await ledger(ws.workspace.id, "refund")).map((e) => e.amount)).toEqual([-1250, -3750]);
    expect(await balance(env, ws.workspace.id)).toBe(0);
    const refunds = await auditEvents(ws.workspace.id, "billing.refund");
    expect(refunds.map((e) => e.details.amount)).toEqual([-3750, -1250]);
    expect(refunds[0]).toMatchObject({ actor_kind: "system", intent: "refund" });
  });

  it("a refund of a charge that bought no pack changes nothing", async () => {
    await ok(
      await deliver(
        stripeEvent("charge.refunded", {
          id: newStripeId("ch"),
          object: "charge",
          amount: 2000,
          amount_refunded: 2000,
          customer,
          payment_intent: newStripeId("pi"),
          metadata: {},
        }),
      ),
    );
    expect(await ledger(ws.workspace.id, "refund")).toEqual([]);
  });

  it("a dispute takes the whole pack back, once per dispute", async () => {
    const session = paymentSession(ws, customer);
    await ok(await deliver(stripeEvent("checkout.session.completed", session)));
    fakeStripe.paymentIntents.set(session.payment_intent, {
      id: session.payment_intent,
      object: "payment_intent",
      customer,
      metadata: { workspace_id: ws.workspace.id, pack_slug: "credits-1000" },
    });
    const dispute = {
      id: newStripeId("dp"),
      object: "dispute",
      amount: 1000,
      charge: newStripeId("ch"),
      payment_intent: session.payment_intent,
      status: "needs_response",
    };
    await ok(await deliver(stripeEvent("charge.dispute.created", dispute)));
    await ok(await deliver(stripeEvent("charge.dispute.created", dispute)));
    expect(await ledger(ws.workspace.id, "dispute")).toEqual([
      { amount: -1000, kind: "dispute", reference: dispute.id },
    ]);
  });

  it("a session naming an unknown workspace is acknowledged and ignored", async () => {
    const session = {
      ...paymentSession(ws, customer),
      client_reference_id: crypto.randomUUID(),
      metadata: { pack_slug: "credits-1000" },
    };
    expect(await ok(await deliver(stripeEvent("checkout.session.completed", session)))).toMatchObject({
      duplicate: false,
    });
    expect(await ledger(ws.workspace.id, "topup")).toEqual([]);
  });

  it("a checkout links its customer to a workspace that has none, once, unless another workspace holds it", async () => {
    const storedCustomer = async (workspaceId: string) =>
      (
        await env.DB.prepare("SELECT stripe_customer_id AS id FROM billing_accounts WHERE workspace_id = ?1")
          .bind(workspaceId)
          .first<{ id: string | null }>()
      )?.id;
    const first = await signupWorkspace();
    const linked = newStripeId("cus");
    await ok(await deliver(stripeEvent("checkout.session.completed", paymentSession(first, linked))));
    await ok(await deliver(stripeEvent("checkout.session.completed", paymentSession(first, linked))));
    expect(await storedCustomer(first.workspace.id)).toBe(linked);
    const links = await auditEvents(first.workspace.id, "billing.customer");
    expect(links).toHaveLength(1);
    expect(links[0]).toMatchObject({ intent: "link_customer", details: { customer_id: linked } });

    // The same customer named for another workspace: its credits arrive, the link stays where it is.
    const second = await signupWorkspace();
    await ok(await deliver(stripeEvent("checkout.session.completed", paymentSession(second, linked))));
    expect(await ledger(second.workspace.id, "topup")).toHaveLength(1);
    expect(await storedCustomer(second.workspace.id)).toBeNull();
    expect(await auditEvents(second.workspace.id, "billing.customer")).toEqual([]);
    expect(await storedCustomer(first.workspace.id)).toBe(linked);
  });
});

describe("subscriptions and invoices", () => {
  let ws: Ws;
  let customer: string;
  beforeEach(async () => {
    ({ ws, customer } = await customerWorkspace());
  });

  const invoice = (subscriptionId: string, id = newStripeId("in")) => ({
    id,
    object: "invoice",
    customer,
    status: "paid",
    amount_paid: 2900,
    parent: { type: "subscription_details", subscription_details: { subscription: subscriptionId } },
  });

  it("invoice.paid before customer.subscription.created: the plan is set and granted once", async () => {
    const sub = subscription({ customer, workspaceId: ws.workspace.id, price: PRICES.pro });
    await ok(await deliver(stripeEvent("invoice.paid", invoice(sub.id as string))));
    expect(await state(ws)).toMatchObject({ plan: "pro", status: "active", customer: true });
    expect(await ledger(ws.workspace.id, "plan_grant")).toMatchObject([{ amount: 5000, kind: "plan_grant" }]);
    await ok(await deliver(stripeEvent("customer.subscription.created", { ...sub, status: "incomplete" })));
    // State comes from Stripe as it is now (active), not from the stale payload.
    const now = await state(ws);
    expect(now).toMatchObject({ plan: "pro", status: "active" });
    expect(now.current_period_end).toMatch(/Z$/);
    expect(fakeStripe.requests.filter((r) => r.method === "GET").map((r) => r.path)).toEqual([
      `/v1/subscriptions/${sub.id}`,
      `/v1/subscriptions/${sub.id}`,
    ]);
    const plans = await auditEvents(ws.workspace.id, "billing.plan");
    expect(plans).toHaveLength(1);
    expect(plans[0]).toMatchObject({
      actor_kind: "system",
      intent: "change_plan",
      details: { plan_slug: "pro", previous_plan_slug: "free", status: "active", previous_status: "none" },
    });
  });

  it("the same invoice under two event ids grants once", async () => {
    const sub = subscription({ customer, workspaceId: ws.workspace.id, price: PRICES.pro });
    const paid = invoice(sub.id as string);
    await ok(await deliver(stripeEvent("invoice.paid", paid)));
    await ok(await deliver(stripeEvent("invoice.paid", paid)));
    expect(await ledger(ws.workspace.id, "plan_grant")).toEqual([
      { amount: 5000, kind: "plan_grant", reference: paid.id },
    ]);
    // The next period's invoice grants again.
    await ok(await deliver(stripeEvent("invoice.paid", invoice(sub.id as string))));
    expect(await ledger(ws.workspace.id, "plan_grant")).toHaveLength(2);
  });

  it("a subscription-mode checkout links the subscription; deletion returns the workspace to free", async () => {
    const sub = subscription({ customer, price: PRICES.pro });
    await ok(
      await deliver(
        stripeEvent("checkout.session.completed", {
          id: newStripeId("cs"),
          object: "checkout.session",
          mode: "subscription",
          customer,
          client_reference_id: ws.workspace.id,
          metadata: { workspace_id: ws.workspace.id, plan_slug: "pro" },
          subscription: sub.id,
          payment_status: "paid",
        }),
      ),
    );
    expect(await state(ws)).toMatchObject({ plan: "pro", status: "active" });
    sub.status = "canceled";
    await ok(await deliver(stripeEvent("customer.subscription.deleted", sub)));
    expect(await state(ws)).toMatchObject({ plan: "free", status: "canceled" });
    const plans = await auditEvents(ws.workspace.id, "billing.plan");
    expect(plans.map((e) => [e.details.previous_plan_slug, e.details.plan_slug])).toEqual([
      ["pro", "free"],
      ["free", "pro"],
    ]);
  });

  it("a deleted subscription Stripe no longer returns is taken from the event", async () => {
    const sub = subscription({ customer, workspaceId: ws.workspace.id, price: PRICES.pro });
    await ok(await deliver(stripeEvent("customer.subscription.created", sub)));
    fakeStripe.subscriptions.delete(sub.id as string);
    await ok(await deliver(stripeEvent("customer.subscription.deleted", { ...sub, status: "canceled" })));
    expect(await state(ws)).toMatchObject({ plan: "free", status: "canceled" });
  });

  it("an event about an old, cancelled subscription does not undo the current one", async () => {
    const current = subscription({ customer, workspaceId: ws.workspace.id, price: PRICES.pro });
    await ok(await deliver(stripeEvent("customer.subscription.created", current)));
    const old = subscription({ customer, workspaceId: ws.workspace.id, price: PRICES.pro, status: "canceled" });
    await ok(await deliver(stripeEvent("customer.subscription.updated", old)));
    expect(await state(ws)).toMatchObject({ plan: "pro", status: "active" });
  });

  it("a Stripe failure while processing answers 500 so Stripe retries, and the retry succeeds", async () => {
    const event = stripeEvent("customer.subscription.updated", {
      id: "sub_test_missing",
      object: "subscription",
      customer,
    });
    await expectProblem(await deliver(event), 500, "webhook_failed");
    subscription({ id: "sub_test_missing", customer, workspaceId: ws.workspace.id, price: PRICES.pro });
    expect(await ok(await deliver(event))).toEqual({ received: true, duplicate: false });
    expect(await state(ws)).toMatchObject({ plan: "pro" });
  });
});
