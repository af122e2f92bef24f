import { sql } from "drizzle-orm";
import Stripe from "stripe";
import { type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { d1Statement, isUniqueViolation } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { logError } from "../platform/log";
import { findPack, findPlan } from "./catalogue";
import type { LedgerKind } from "./schemas";
import { type Account, findAccount, LIVE_STATUSES } from "./service";
import { slugForPrice, stripeClient } from "./stripe";

/**
 * Stripe events, processed once each: the event id is inserted into `stripe_events` in the
 * same D1 batch as its effect, so a replay or a concurrent duplicate fails that insert and
 * changes nothing. Subscription state is read from Stripe as it is now, because events
 * arrive out of order.
 */

/** `workspaceId`: whose audit outbox the event wrote to (to deliver after the response). */
export type WebhookOutcome = { duplicate: boolean; workspaceId: string | null };

/**
 * A statement of the event's effect, and the statement of its audit event, placed right after
 * it in the same batch and written only if the effect changed a row.
 */
type Effect = { statement: D1PreparedStatement; event?: D1PreparedStatement };

const SYSTEM = { kind: "system" as const, id: null };
const idOf = (v: string | { id: string } | null | undefined) => (typeof v === "string" ? v : (v?.id ?? null));

async function workspaceExists(env: Env, id: string | null | undefined): Promise<string | null> {
  if (!id) return null;
  const row = await env.DB.prepare("SELECT id FROM workspaces WHERE id = ?1").bind(id).first<{ id: string }>();
  return row?.id ?? null;
}

async function workspaceOfCustomer(env: Env, customerId: string | null): Promise<string | null> {
  if (!customerId) return null;
  const row = await env.DB.prepare("SELECT workspace_id FROM billing_accounts WHERE stripe_customer_id = ?1")
    .bind(customerId)
    .first<{ workspace_id: string }>();
  return row?.workspace_id ?? null;
}

function ledgerEffect(
  env: Env,
  eventId: string,
  workspaceId: string,
  kind: LedgerKind,
  amount: number,
  reference: string,
  extra: Record<string, unknown>,
): Effect {
  const id = newId();
  return {
    statement: env.DB.prepare(
      `INSERT INTO credit_ledger (id, workspace_id, amount, kind, reference, created_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING RETURNING id, amount`,
    ).bind(id, workspaceId, amount, kind, reference, nowIso()),
    event: d1Statement(
      env,
      auditInBatch(
        env,
        {
          workspaceId: workspaceId,
          kind: amount >= 0 ? "billing.credit" : "billing.refund",
          actor: SYSTEM,
          target: `ledger:${id}`,
          intent: kind,
          details: { ledger_kind: kind, amount, reference, event_id: eventId, ...extra },
        },
        { onlyIf: PREVIOUS_STATEMENT_CHANGED },
      ),
    ),
  };
}

/** Links a Stripe customer to the workspace if it has none and no other workspace holds it. */
function linkCustomerEffects(env: Env, workspaceId: string, customerId: string | null): Effect[] {
  const now = nowIso();
  const effects: Effect[] = [
    {
      statement: env.DB.prepare(
        "INSERT INTO billing_accounts (workspace_id, updated_at) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
      ).bind(workspaceId, now),
    },
  ];
  if (customerId)
    effects.push({
      statement: env.DB.prepare(
        `UPDATE billing_accounts SET stripe_customer_id = ?1, updated_at = ?2
         WHERE workspace_id = ?3 AND stripe_customer_id IS NULL
           AND NOT EXISTS (SELECT 1 FROM billing_accounts WHERE stripe_customer_id = ?1)
         RETURNING workspace_id`,
      ).bind(customerId, now, workspaceId),
      event: d1Statement(
        env,
        auditInBatch(
          env,
          {
            workspaceId: workspaceId,
            kind: "billing.customer",
            actor: SYSTEM,
            target: `workspace:${workspaceId}`,
            intent: "link_customer",
            details: { customer_id: customerId },
          },
          { onlyIf: PREVIOUS_STATEMENT_CHANGED },
        ),
      ),
    });
  return effects;
}

type SubscriptionState = { workspaceId: string; planSlug: string | null; effects: Effect[] };

/**
 * The subscription as Stripe has it now, applied to its workspace: the plan of its price
 * while it is live, else `free`. An event about a subscription that is not the workspace's
 * current one only applies when that subscription is live (a new one replacing the old).
 */
async function subscriptionState(
  env: Env,
  eventId: string,
  subscriptionId: string,
  fallback?: Stripe.Subscription,
): Promise<SubscriptionState | null> {
  let sub: Stripe.Subscription;
  try {
    sub = await stripeClient(env).subscriptions.retrieve(subscriptionId);
  } catch (e) {
    if (!(fallback && e instanceof Stripe.errors.StripeError && e.statusCode === 404)) throw e;
    sub = fallback;
  }
  const customerId = idOf(sub.customer);
  const workspaceId =
    (await workspaceExists(env, sub.metadata?.workspace_id)) ?? (await workspaceOfCustomer(env, customerId));
  if (!workspaceId) return null;
  const live = LIVE_STATUSES.includes(sub.status);
  const pricedSlug = slugForPrice(env, sub.items.data[0]?.price.id);
  const plan = pricedSlug ? await findPlan(env, pricedSlug) : undefined;
  if (live && !plan) {
    logError("live subscription with a price no plan has", undefined, { event_id: eventId });
    return { workspaceId, planSlug: null, effects: linkCustomerEffects(env, workspaceId, customerId) };
  }
  const planSlug = live && plan ? plan.slug : "free";
  const ends = sub.items.data.map((i) => i.current_period_end).filter((t): t is number => typeof t === "number");
  const periodEnd = ends.length ? new Date(Math.max(...ends) * 1000).toISOString() : null;
  const before: Account | undefined = await findAccount(env, workspaceId);
  const effects = linkCustomerEffects(env, workspaceId, customerId);
  effects.push({
    statement: env.DB.prepare(
      `UPDATE billing_accounts SET plan_slug = ?1, status = ?2, current_period_end = ?3, stripe_subscription_id = ?4, updated_at = ?5
       WHERE workspace_id = ?6 AND (stripe_subscription_id IS NULL OR stripe_subscription_id = ?4 OR ?7 = 1)
       RETURNING plan_slug, status`,
    ).bind(planSlug, sub.status, periodEnd, sub.id, nowIso(), workspaceId, live ? 1 : 0),
    // Recorded when the plan or status moves (and the update applied).
    event:
      before?.planSlug === planSlug && before?.status === sub.status
        ? undefined
        : d1Statement(
            env,
            auditInBatch(
              env,
              {
                workspaceId: workspaceId,
                kind: "billing.plan",
                actor: SYSTEM,
                target: `workspace:${workspaceId}`,
                intent: "change_plan",
                details: {
                  plan_slug: planSlug,
                  previous_plan_slug: before?.planSlug ?? "free",
                  status: sub.status,
                  previous_status: before?.status ?? "none",
                  subscription_id: sub.id,
                  event_id: eventId,
                },
              },
              { onlyIf: PREVIOUS_STATEMENT_CHANGED },
            ),
          ),
  });
  return { workspaceId, planSlug: live && plan ? plan.slug : null, effects };
}

/** A paid payment-mode session: the pack's credits, referenced by the payment intent (what refunds and disputes name). */
async function topupEffects(env: Env, event: Stripe.Event, session: Stripe.Checkout.Session) {
  const workspaceId = await workspaceExists(env, session.client_reference_id ?? session.metadata?.workspace_id);
  if (!workspaceId) return { workspaceId: null, effects: [] };
  const effects = linkCustomerEffects(env, workspaceId, idOf(session.customer));
  const paid = event.type === "checkout.session.async_payment_succeeded" || session.payment_status === "paid";
  const pack = session.metadata?.pack_slug ? await findPack(env, session.metadata.pack_slug) : undefined;
  if (paid && pack) {
    const reference = idOf(session.payment_intent) ?? session.id;
    effects.push(
      ledgerEffect(env, event.id, workspaceId, "topup", pack.credits, reference, {
        pack_slug: pack.slug,
      }),
    );
  }
  return { workspaceId, effects };
}

/** The top-up a payment intent paid for, if any. */
async function topupOf(env: Env, workspaceId: string, paymentIntentId: string) {
  return env.DB.prepare(
    "SELECT amount FROM credit_ledger WHERE workspace_id = ?1 AND kind = 'topup' AND reference = ?2",
  )
    .bind(workspaceId, paymentIntentId)
    .first<{ amount: number }>();
}

/**
 * A refund takes back the top-up's credits in proportion to the amount refunded so far. The
 * reference carries the cumulative refunded amount, and the one statement inserts only
 * what earlier refund entries of the same payment have not already taken back.
 */
async function refundEffects(env: Env, event: Stripe.Event, charge: Stripe.Charge) {
  const paymentIntent = idOf(charge.payment_intent);
  const workspaceId =
    (await workspaceExists(env, charge.metadata?.workspace_id)) ??
    (await workspaceOfCustomer(env, idOf(charge.customer)));
  if (!workspaceId || !paymentIntent || charge.amount <= 0) return { workspaceId, effects: [] };
  const topup = await topupOf(env, workspaceId, paymentIntent);
  if (!topup) return { workspaceId, effects: [] };
  const target = Math.min(topup.amount, Math.round((topup.amount * charge.amount_refunded) / charge.amount));
  const prefix = `${paymentIntent}:`;
  const reference = `${prefix}${charge.amount_refunded}`;
  const id = newId();
  const refunded: AuditEventInput = {
    workspaceId: workspaceId,
    kind: "billing.refund",
    actor: SYSTEM,
    target: `ledger:${id}`,
    intent: "refund",
    details: { ledger_kind: "refund", reference, event_id: event.id, charge_id: charge.id },
  };
  const effect: Effect = {
    statement: env.DB.prepare(
      `INSERT INTO credit_ledger (id, workspace_id, amount, kind, reference, created_at)
       SELECT ?1, ?2, -(?3 - done), 'refund', ?4, ?5
       FROM (SELECT COALESCE(-SUM(amount), 0) AS done FROM credit_ledger
             WHERE workspace_id = ?2 AND kind = 'refund' AND substr(reference, 1, length(?6)) = ?6)
       WHERE ?3 - done > 0
       ON CONFLICT DO NOTHING RETURNING id, amount`,
    ).bind(id, workspaceId, target, reference, nowIso(), prefix),
    // The amount is what the insert computed: read from its row (no row, no event).
    event: d1Statement(
      env,
      auditInBatch(env, refunded, {
        from: { source: sql`FROM credit_ledger l WHERE l.id = ${id}`, fields: { "$.details.amount": sql`l.amount` } },
      }),
    ),
  };
  return { workspaceId, effects: [effect] };
}

/** A dispute takes back the whole top-up it is about (once per dispute). */
async function disputeEffects(env: Env, event: Stripe.Event, dispute: Stripe.Dispute) {
  const paymentIntentId = idOf(dispute.payment_intent);
  if (!paymentIntentId) return { workspaceId: null, effects: [] };
  const intent = await stripeClient(env).paymentIntents.retrieve(paymentIntentId);
  const workspaceId =
    (await workspaceExists(env, intent.metadata?.workspace_id)) ??
    (await workspaceOfCustomer(env, idOf(intent.customer)));
  if (!workspaceId) return { workspaceId, effects: [] };
  const topup = await topupOf(env, workspaceId, paymentIntentId);
  if (!topup) return { workspaceId, effects: [] };
  return {
    workspaceId,
    effects: [
      ledgerEffect(env, event.id, workspaceId, "dispute", -topup.amount, dispute.id, {
        charge_id: idOf(dispute.charge),
      }),
    ],
  };
}

/** One `plan_grant` per paid subscription invoice, of its plan's monthly credits. */
async function invoiceEffects(env: Env, event: Stripe.Event, invoice: Stripe.Invoice) {
  const subscriptionId = idOf(invoice.parent?.subscription_details?.subscription);
  if (!subscriptionId || !invoice.id) return { workspaceId: null, effects: [] };
  const state = await subscriptionState(env, event.id, subscriptionId);
  if (!state) return { workspaceId: null, effects: [] };
  const effects = [...state.effects];
  const plan = state.planSlug ? await findPlan(env, state.planSlug) : undefined;
  if (plan && plan.slug !== "free" && plan.monthlyCredits > 0)
    effects.push(
      ledgerEffect(env, event.id, state.workspaceId, "plan_grant", plan.monthlyCredits, invoice.id, {
        plan_slug: plan.slug,
      }),
    );
  return { workspaceId: state.workspaceId, effects };
}

async function effectsOf(env: Env, event: Stripe.Event): Promise<{ workspaceId: string | null; effects: Effect[] }> {
  switch (event.type) {
    case "checkout.session.completed":
    case "checkout.session.async_payment_succeeded": {
      const session = event.data.object;
      if (session.mode === "payment") return topupEffects(env, event, session);
      const subscriptionId = idOf(session.subscription);
      if (session.mode !== "subscription" || !subscriptionId) return { workspaceId: null, effects: [] };
      const state = await subscriptionState(env, event.id, subscriptionId);
      return state ?? { workspaceId: null, effects: [] };
    }
    case "customer.subscription.created":
    case "customer.subscription.updated":
    case "customer.subscription.deleted": {
      // A deleted subscription may be gone from Stripe's API; the event then holds its final state.
      const fallback = event.type === "customer.subscription.deleted" ? event.data.object : undefined;
      const state = await subscriptionState(env, event.id, event.data.object.id, fallback);
      return state ?? { workspaceId: null, effects: [] };
    }
    case "invoice.paid":
      return invoiceEffects(env, event, event.data.object);
    case "charge.refunded":
      return refundEffects(env, event, event.data.object);
    case "charge.dispute.created":
      return disputeEffects(env, event, event.data.object);
    default:
      return { workspaceId: null, effects: [] };
  }
}

export const HANDLED_EVENTS = [
  "checkout.session.completed",
  "checkout.session.async_payment_succeeded",
  "customer.subscription.created",
  "customer.subscription.updated",
  "customer.subscription.deleted",
  "invoice.paid",
  "charge.refunded",
  "charge.dispute.created",
] as const;

const SEEN_SQL = "SELECT 1 AS one FROM stripe_events WHERE id = ?1";

/** Processes a verified event once; returns the audit events of what it changed. */
export async function processEvent(env: Env, event: Stripe.Event): Promise<WebhookOutcome> {
  if (!(HANDLED_EVENTS as readonly string[]).includes(event.type)) return { duplicate: false, workspaceId: null };
  // A replay stops here without calling Stripe; a concurrent duplicate is stopped by the batch below.
  const seen = await env.DB.prepare(SEEN_SQL).bind(event.id).first();
  if (seen) return { duplicate: true, workspaceId: null };
  const { workspaceId, effects } = await effectsOf(env, event);
  const record = env.DB.prepare(
    "INSERT INTO stripe_events (id, type, workspace_id, received_at) VALUES (?1, ?2, ?3, ?4)",
  ).bind(event.id, event.type, workspaceId, nowIso());
  try {
    await env.DB.batch([record, ...effects.flatMap((e) => (e.event ? [e.statement, e.event] : [e.statement]))]);
  } catch (e) {
    // Only the event's own insert may conflict: anything else is a real failure, and Stripe retries.
    if (isUniqueViolation(e) && (await env.DB.prepare(SEEN_SQL).bind(event.id).first()))
      return { duplicate: true, workspaceId: null };
    throw e;
  }
  return { duplicate: false, workspaceId };
}
