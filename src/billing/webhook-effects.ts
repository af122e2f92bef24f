/** What the Stripe webhook's handlers share: the workspace an event names, and the effects every kind writes. */
import { eq, notExists, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { billingAccounts, creditLedger, workspaces } from "../db/schema";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import type { LedgerKind } from "./schemas";
import { accountInsert, customerClaim } from "./service";

/**
 * A query of the event's effect, and the query of its audit event, placed right after it in
 * the same batch and written only if the effect changed a row.
 */
export type Effect = { statement: BatchItem<"sqlite">; event?: BatchItem<"sqlite"> };

/** The workspace an event is about (whose outbox its audit events go to), and what it changes there. */
export type Effects = { workspaceId: string | null; effects: Effect[] };

export const noEffects = (): Effects => ({ workspaceId: null, effects: [] });

export const SYSTEM = { kind: "system" as const, id: null };

export const idOf = (v: string | { id: string } | null | undefined) => (typeof v === "string" ? v : (v?.id ?? null));

export async function workspaceExists(env: Env, id: string | null | undefined): Promise<string | null> {
  if (!id) return null;
  const row = await db(env).select({ id: workspaces.id }).from(workspaces).where(eq(workspaces.id, id)).get();
  return row?.id ?? null;
}

async function workspaceOfCustomer(env: Env, customerId: string | null): Promise<string | null> {
  if (!customerId) return null;
  const row = await db(env)
    .select({ workspaceId: billingAccounts.workspaceId })
    .from(billingAccounts)
    .where(eq(billingAccounts.stripeCustomerId, customerId))
    .get();
  return row?.workspaceId ?? null;
}

/** The workspace a Stripe object names in its metadata if it exists, else the one its customer is linked to. */
export async function workspaceOf(
  env: Env,
  object: { metadata?: Record<string, string> | null; customer?: string | { id: string } | null },
): Promise<string | null> {
  return (await workspaceExists(env, object.metadata?.workspace_id)) ?? workspaceOfCustomer(env, idOf(object.customer));
}

/** A ledger entry written once per (workspace, kind, reference), with its `billing.credit` or `billing.refund` event. */
export function ledgerEffect(
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
    statement: db(env)
      .insert(creditLedger)
      .values({ id, workspaceId, amount, kind, reference, createdAt: nowIso() })
      .onConflictDoNothing(),
    event: auditInBatch(
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
  };
}

/** Links a Stripe customer to the workspace if it has none and no other workspace holds it. */
export function linkCustomerEffects(env: Env, workspaceId: string, customerId: string | null): Effect[] {
  const d = db(env);
  const now = nowIso();
  const effects: Effect[] = [{ statement: accountInsert(d, workspaceId, now) }];
  if (customerId) {
    const held = d
      .select({ one: sql`1` })
      .from(billingAccounts)
      .where(eq(billingAccounts.stripeCustomerId, customerId));
    effects.push({
      statement: customerClaim(d, workspaceId, customerId, now, notExists(held)),
      event: auditInBatch(
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
    });
  }
  return effects;
}
