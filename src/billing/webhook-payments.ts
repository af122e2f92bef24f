/** The webhook's payment-mode events: a paid top-up adds its pack's credits; a refund or a dispute takes them back. */
import { and, eq, sql } from "drizzle-orm";
import type Stripe from "stripe";
import { type AuditEventInput, auditInBatch } from "../audit/events";
import { creditLedger } from "../db/schema";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { findPack } from "./catalogue";
import { stripeClient } from "./stripe";
import {
  type Effect,
  type Effects,
  idOf,
  ledgerEffect,
  linkCustomerEffects,
  noEffects,
  SYSTEM,
  workspaceExists,
  workspaceOf,
} from "./webhook-effects";

/** A paid payment-mode session: the pack's credits, referenced by the payment intent (what refunds and disputes name). */
export async function topupEffects(env: Env, event: Stripe.Event, session: Stripe.Checkout.Session): Promise<Effects> {
  const workspaceId = await workspaceExists(env, session.client_reference_id ?? session.metadata?.workspace_id);
  if (!workspaceId) return noEffects();
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
  return db(env)
    .select({ amount: creditLedger.amount })
    .from(creditLedger)
    .where(
      and(
        eq(creditLedger.workspaceId, workspaceId),
        eq(creditLedger.kind, "topup"),
        eq(creditLedger.reference, paymentIntentId),
      ),
    )
    .get();
}

/**
 * A refund takes back the top-up's credits in proportion to the amount refunded so far. The
 * reference carries the cumulative refunded amount, and the one statement inserts only
 * what earlier refund entries of the same payment have not already taken back.
 */
export async function refundEffects(env: Env, event: Stripe.Event, charge: Stripe.Charge): Promise<Effects> {
  const paymentIntent = idOf(charge.payment_intent);
  const workspaceId = await workspaceOf(env, charge);
  if (!workspaceId || !paymentIntent || charge.amount <= 0) return { workspaceId, effects: [] };
  const topup = await topupOf(env, workspaceId, paymentIntent);
  if (!topup) return { workspaceId, effects: [] };
  const target = Math.min(topup.amount, Math.round((topup.amount * charge.amount_refunded) / charge.amount));
  const reference = `${paymentIntent}:${charge.amount_refunded}`;
  return { workspaceId, effects: [refundEffect(env, event, charge, workspaceId, target, reference)] };
}

/** The refund entry of what is still to take back (`target` less earlier refunds of the payment), and its event. */
function refundEffect(
  env: Env,
  event: Stripe.Event,
  charge: Stripe.Charge,
  workspaceId: string,
  target: number,
  reference: string,
): Effect {
  const prefix = `${idOf(charge.payment_intent)}:`;
  const id = newId();
  const refunded: AuditEventInput = {
    workspaceId: workspaceId,
    kind: "billing.refund",
    actor: SYSTEM,
    target: `ledger:${id}`,
    intent: "refund",
    details: { ledger_kind: "refund", reference, event_id: event.id, charge_id: charge.id },
  };
  const done = sql`(SELECT COALESCE(-SUM(${creditLedger.amount}), 0) AS done FROM ${creditLedger}
    WHERE ${creditLedger.workspaceId} = ${workspaceId} AND ${creditLedger.kind} = 'refund'
      AND substr(${creditLedger.reference}, 1, length(${prefix})) = ${prefix})`;
  return {
    statement: db(env)
      .insert(creditLedger)
      .select(
        sql`SELECT ${id}, ${workspaceId}, -(${target} - done), 'refund', ${reference}, ${nowIso()}
          FROM ${done} WHERE ${target} - done > 0`,
      )
      .onConflictDoNothing(),
    // The amount is what the insert computed: read from its row (no row, no event).
    event: auditInBatch(env, refunded, {
      from: { source: sql`FROM credit_ledger l WHERE l.id = ${id}`, fields: { "$.details.amount": sql`l.amount` } },
    }),
  };
}

/** A dispute takes back the whole top-up it is about (once per dispute). */
export async function disputeEffects(env: Env, event: Stripe.Event, dispute: Stripe.Dispute): Promise<Effects> {
  const paymentIntentId = idOf(dispute.payment_intent);
  if (!paymentIntentId) return noEffects();
  const intent = await stripeClient(env).paymentIntents.retrieve(paymentIntentId);
  const workspaceId = await workspaceOf(env, intent);
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
