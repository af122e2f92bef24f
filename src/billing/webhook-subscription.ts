/** The webhook's subscription events: the workspace's plan follows its subscription, and each paid invoice grants the plan's credits. */
import { and, eq, isNull, or } from "drizzle-orm";
import Stripe from "stripe";
import { auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { billingAccounts } from "../db/schema";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { logError } from "../platform/log";
import { findPlan } from "./catalogue";
import { slugForPrice } from "./prices";
import { type Account, findAccount, LIVE_STATUSES } from "./service";
import { stripeClient } from "./stripe";
import {
  type Effect,
  type Effects,
  idOf,
  ledgerEffect,
  linkCustomerEffects,
  noEffects,
  SYSTEM,
  workspaceOf,
} from "./webhook-effects";

type SubscriptionState = { workspaceId: string; planSlug: string | null; effects: Effect[] };

/** The subscription as Stripe has it now; a deleted one may be gone from the API, and `fallback` (the event's copy) stands in. */
async function currentSubscription(
  env: Env,
  subscriptionId: string,
  fallback?: Stripe.Subscription,
): Promise<Stripe.Subscription> {
  try {
    return await stripeClient(env).subscriptions.retrieve(subscriptionId);
  } catch (e) {
    if (!(fallback && e instanceof Stripe.errors.StripeError && e.statusCode === 404)) throw e;
    return fallback;
  }
}

/**
 * The subscription as Stripe has it now, applied to its workspace: the plan of its price
 * while it is live, else `free`. An event about a subscription that is not the workspace's
 * current one only applies when that subscription is live (a new one replacing the old).
 */
export async function subscriptionState(
  env: Env,
  eventId: string,
  subscriptionId: string,
  fallback?: Stripe.Subscription,
): Promise<SubscriptionState | null> {
  const sub = await currentSubscription(env, subscriptionId, fallback);
  const customerId = idOf(sub.customer);
  const workspaceId = await workspaceOf(env, sub);
  if (!workspaceId) return null;
  const live = LIVE_STATUSES.includes(sub.status);
  const pricedSlug = slugForPrice(env, sub.items.data[0]?.price.id);
  const plan = pricedSlug ? await findPlan(env, pricedSlug) : undefined;
  if (live && !plan) {
    logError("live subscription with a price no plan has", undefined, { event_id: eventId });
    return { workspaceId, planSlug: null, effects: linkCustomerEffects(env, workspaceId, customerId) };
  }
  const planSlug = live && plan ? plan.slug : "free";
  const before = await findAccount(env, workspaceId);
  const effects = linkCustomerEffects(env, workspaceId, customerId);
  effects.push(planEffect(env, eventId, workspaceId, sub, planSlug, before));
  return { workspaceId, planSlug: live && plan ? plan.slug : null, effects };
}

/** The workspace's plan, status and period from the subscription, with a `billing.plan` event when the plan or status moves. */
function planEffect(
  env: Env,
  eventId: string,
  workspaceId: string,
  sub: Stripe.Subscription,
  planSlug: string,
  before: Account | undefined,
): Effect {
  const ends = sub.items.data.map((i) => i.current_period_end).filter((t): t is number => typeof t === "number");
  const periodEnd = ends.length ? new Date(Math.max(...ends) * 1000).toISOString() : null;
  const ofWorkspace = eq(billingAccounts.workspaceId, workspaceId);
  const current = or(isNull(billingAccounts.stripeSubscriptionId), eq(billingAccounts.stripeSubscriptionId, sub.id));
  const statement = db(env)
    .update(billingAccounts)
    .set({
      planSlug,
      status: sub.status,
      currentPeriodEnd: periodEnd,
      stripeSubscriptionId: sub.id,
      updatedAt: nowIso(),
    })
    .where(LIVE_STATUSES.includes(sub.status) ? ofWorkspace : and(ofWorkspace, current));
  if (before?.planSlug === planSlug && before?.status === sub.status) return { statement };
  // Recorded when the update applied.
  const event = auditInBatch(
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
  );
  return { statement, event };
}

/** One `plan_grant` per paid subscription invoice, of its plan's monthly credits. */
export async function invoiceEffects(env: Env, event: Stripe.Event, invoice: Stripe.Invoice): Promise<Effects> {
  const subscriptionId = idOf(invoice.parent?.subscription_details?.subscription);
  if (!subscriptionId || !invoice.id) return noEffects();
  const state = await subscriptionState(env, event.id, subscriptionId);
  if (!state) return noEffects();
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
