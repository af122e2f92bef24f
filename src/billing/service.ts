import { and, eq, isNull, type SQL } from "drizzle-orm";
import Stripe from "stripe";
import { type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { billingAccounts } from "../db/schema";
import { type Db, db } from "../platform/db";
import { nowIso } from "../platform/env";
import { logError } from "../platform/log";
import { ApiError, badRequest } from "../platform/problem";
import { findPack, findPlan } from "./catalogue";
import { grantedBalance } from "./ledger";
import { prices } from "./prices";
import type { BillingStatus } from "./schemas";
import { stripeClient } from "./stripe";

/** Subscription statuses under which the subscribed plan applies; anything else is the free plan. */
export const LIVE_STATUSES: readonly string[] = ["active", "trialing", "past_due"];

export type Account = typeof billingAccounts.$inferSelect;

export async function findAccount(env: Env, workspaceId: string): Promise<Account | undefined> {
  return db(env).select().from(billingAccounts).where(eq(billingAccounts.workspaceId, workspaceId)).get();
}

export async function billingStatus(env: Env, workspaceId: string): Promise<BillingStatus> {
  const [account, balance] = await Promise.all([findAccount(env, workspaceId), grantedBalance(env, workspaceId)]);
  return {
    plan: account?.planSlug ?? "free",
    status: account?.status ?? "none",
    current_period_end: account?.currentPeriodEnd ?? null,
    balance,
    customer: !!account?.stripeCustomerId,
  };
}

/** The workspace's billing row with its defaults, if it has none yet. */
export const accountInsert = (d: Db, workspaceId: string, now: string) =>
  d.insert(billingAccounts).values({ workspaceId, updatedAt: now }).onConflictDoNothing();

/** Stores the Stripe customer id on the workspace's row if it has none (and `also` holds). */
export const customerClaim = (d: Db, workspaceId: string, customerId: string, now: string, also?: SQL) =>
  d
    .update(billingAccounts)
    .set({ stripeCustomerId: customerId, updatedAt: now })
    .where(and(eq(billingAccounts.workspaceId, workspaceId), isNull(billingAccounts.stripeCustomerId), also))
    .returning({ workspaceId: billingAccounts.workspaceId });

/** Turns a failure of Stripe's API into a 502 problem; the provider's message is not shown. */
async function callStripe<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof Stripe.errors.StripeError) {
      logError(`stripe ${what} failed`, undefined, { type: e.type, code: e.code, status: e.statusCode });
      throw new ApiError(502, "payment_provider_error", `The payment provider refused to ${what}`);
    }
    throw e;
  }
}

/**
 * The workspace's Stripe customer, created on demand. Concurrent first calls send the same
 * Idempotency-Key (derived from the workspace id), so Stripe answers them all with one
 * customer; the id is stored (claimed once by a conditional UPDATE) before it is used.
 */
export async function ensureCustomer(
  env: Env,
  workspaceId: string,
  customerEvent: CustomerEvent,
): Promise<{ customerId: string; created: boolean }> {
  const existing = await findAccount(env, workspaceId);
  if (existing?.stripeCustomerId) return { customerId: existing.stripeCustomerId, created: false };
  const stripe = stripeClient(env);
  const customer = await callStripe("create the customer", () =>
    stripe.customers.create({ metadata: { workspace_id: workspaceId } }, { idempotencyKey: `customer:${workspaceId}` }),
  );
  const now = nowIso();
  const d = db(env);
  const [, claimed] = await d.batch([
    accountInsert(d, workspaceId, now),
    customerClaim(d, workspaceId, customer.id, now),
    auditInBatch(env, customerEvent(customer.id), { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
  ]);
  if (claimed.length) return { customerId: customer.id, created: true };
  const stored = await findAccount(env, workspaceId);
  if (!stored?.stripeCustomerId) throw new Error("billing account lost its customer id");
  return { customerId: stored.stripeCustomerId, created: false };
}

/** The audit event of a Stripe customer this call links to the workspace (written with the link). */
export type CustomerEvent = (customerId: string) => AuditEventInput;

/**
 * What a Stripe session is opened for: the service's origin (the redirect's way back), the key
 * that makes the Stripe call idempotent for this request, and the event of a customer created on demand.
 */
export type StripeRequest = { origin: string; requestKey: string; customerEvent: CustomerEvent };

export type Redirect = { url: string; sessionId: string; customerId: string; customerCreated: boolean };

function redirectUrl(url: string | null): string {
  if (!url) throw new ApiError(502, "payment_provider_error", "The payment provider returned no URL");
  return url;
}

/** A subscription-mode Checkout Session for an active, priced plan. Nothing is provisioned here. */
export async function startCheckout(
  env: Env,
  workspaceId: string,
  planSlug: string,
  request: StripeRequest,
): Promise<Redirect> {
  const stripe = stripeClient(env);
  const plan = await findPlan(env, planSlug);
  if (!plan) throw new ApiError(404, "plan_not_found", `No plan "${planSlug}"`);
  if (!plan.active) throw badRequest("plan_inactive", `The plan "${planSlug}" is no longer offered`);
  const price = plan.slug === "free" ? undefined : prices(env)[plan.slug];
  if (!price) throw badRequest("plan_not_priced", `The plan "${planSlug}" has no price`);
  const account = await findAccount(env, workspaceId);
  if (account?.stripeSubscriptionId && LIVE_STATUSES.includes(account.status))
    throw badRequest(
      "already_subscribed",
      "The workspace already has a subscription; change or cancel it in the billing portal",
    );
  const sale: Sale = { kind: "checkout", price, metadata: { plan_slug: plan.slug } };
  return checkoutSession(stripe, env, workspaceId, sale, request);
}

/** A payment-mode Checkout Session for one credit pack, on any plan. Credits come from the webhook. */
export async function startTopup(
  env: Env,
  workspaceId: string,
  packSlug: string,
  request: StripeRequest,
): Promise<Redirect> {
  const stripe = stripeClient(env);
  const pack = await findPack(env, packSlug);
  if (!pack) throw new ApiError(404, "pack_not_found", `No credit pack "${packSlug}"`);
  const price = prices(env)[pack.slug];
  if (!price) throw badRequest("pack_not_priced", `The credit pack "${packSlug}" has no price`);
  const sale: Sale = { kind: "topup", price, metadata: { pack_slug: pack.slug } };
  return checkoutSession(stripe, env, workspaceId, sale, request);
}

/** What a Checkout Session sells: a plan's subscription (`checkout`) or a pack's one payment (`topup`). */
type Sale = { kind: "checkout" | "topup"; price: string; metadata: Record<string, string> };

/** The Checkout Session of a sale, for the workspace's customer (created first if it has none). */
async function checkoutSession(
  stripe: ReturnType<typeof stripeClient>,
  env: Env,
  workspaceId: string,
  sale: Sale,
  request: StripeRequest,
): Promise<Redirect> {
  const { customerId, created } = await ensureCustomer(env, workspaceId, request.customerEvent);
  const metadata = { workspace_id: workspaceId, ...sale.metadata };
  const subscription = sale.kind === "checkout";
  const session = await callStripe("create the checkout session", () =>
    stripe.checkout.sessions.create(
      {
        mode: subscription ? "subscription" : "payment",
        customer: customerId,
        client_reference_id: workspaceId,
        line_items: [{ price: sale.price, quantity: 1 }],
        metadata,
        ...(subscription ? { subscription_data: { metadata } } : { payment_intent_data: { metadata } }),
        success_url: `${request.origin}/?${sale.kind}=success`,
        cancel_url: `${request.origin}/?${sale.kind}=cancelled`,
      },
      { idempotencyKey: `${sale.kind}:${workspaceId}:${request.requestKey}` },
    ),
  );
  return { url: redirectUrl(session.url), sessionId: session.id, customerId, customerCreated: created };
}

/** A billing-portal session, where the admin manages payment methods, invoices and the subscription. */
export async function startPortal(env: Env, workspaceId: string, request: StripeRequest): Promise<Redirect> {
  const stripe = stripeClient(env);
  const { customerId, created } = await ensureCustomer(env, workspaceId, request.customerEvent);
  const session = await callStripe("create the portal session", () =>
    stripe.billingPortal.sessions.create(
      { customer: customerId, return_url: `${request.origin}/` },
      { idempotencyKey: `portal:${workspaceId}:${request.requestKey}` },
    ),
  );
  return { url: redirectUrl(session.url), sessionId: session.id, customerId, customerCreated: created };
}
