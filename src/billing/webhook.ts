import { eq } from "drizzle-orm";
import type Stripe from "stripe";
import { stripeEvents } from "../db/schema";
import { db, isUniqueViolation } from "../platform/db";
import { nowIso } from "../platform/env";
import { type Effects, idOf, noEffects } from "./webhook-effects";
import { disputeEffects, refundEffects, topupEffects } from "./webhook-payments";
import { invoiceEffects, subscriptionState } from "./webhook-subscription";

/**
 * Stripe events, processed once each: the event id is inserted into `stripe_events` in the
 * same D1 batch as its effect, so a replay or a concurrent duplicate fails that insert and
 * changes nothing. Subscription state is read from Stripe as it is now, because events
 * arrive out of order.
 */

/** `workspaceId`: whose audit outbox the event wrote to (to deliver after the response). */
export type WebhookOutcome = { duplicate: boolean; workspaceId: string | null };

async function effectsOf(env: Env, event: Stripe.Event): Promise<Effects> {
  switch (event.type) {
    case "checkout.session.completed":
    case "checkout.session.async_payment_succeeded": {
      const session = event.data.object;
      if (session.mode === "payment") return topupEffects(env, event, session);
      const subscriptionId = idOf(session.subscription);
      if (session.mode !== "subscription" || !subscriptionId) return noEffects();
      return (await subscriptionState(env, event.id, subscriptionId)) ?? noEffects();
    }
    case "customer.subscription.created":
    case "customer.subscription.updated":
    case "customer.subscription.deleted": {
      // A deleted subscription may be gone from Stripe's API; the event then holds its final state.
      const fallback = event.type === "customer.subscription.deleted" ? event.data.object : undefined;
      return (await subscriptionState(env, event.id, event.data.object.id, fallback)) ?? noEffects();
    }
    case "invoice.paid":
      return invoiceEffects(env, event, event.data.object);
    case "charge.refunded":
      return refundEffects(env, event, event.data.object);
    case "charge.dispute.created":
      return disputeEffects(env, event, event.data.object);
    default:
      return noEffects();
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

const seen = async (env: Env, eventId: string) =>
  (await db(env).select({ id: stripeEvents.id }).from(stripeEvents).where(eq(stripeEvents.id, eventId)).get()) !==
  undefined;

/** Processes a verified event once; returns the audit events of what it changed. */
export async function processEvent(env: Env, event: Stripe.Event): Promise<WebhookOutcome> {
  if (!(HANDLED_EVENTS as readonly string[]).includes(event.type)) return { duplicate: false, workspaceId: null };
  // A replay stops here without calling Stripe; a concurrent duplicate is stopped by the batch below.
  if (await seen(env, event.id)) return { duplicate: true, workspaceId: null };
  const { workspaceId, effects } = await effectsOf(env, event);
  const d = db(env);
  const record = d.insert(stripeEvents).values({ id: event.id, type: event.type, workspaceId, receivedAt: nowIso() });
  try {
    await d.batch([record, ...effects.flatMap((e) => (e.event ? [e.statement, e.event] : [e.statement]))]);
  } catch (e) {
    // Only the event's own insert may conflict: anything else is a real failure, and Stripe retries.
    if (isUniqueViolation(e) && (await seen(env, event.id))) return { duplicate: true, workspaceId: null };
    throw e;
  }
  return { duplicate: false, workspaceId };
}
