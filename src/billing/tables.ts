/**
 * Billing: the plan and pack catalogues (seeded by migration), each workspace's Stripe link
 * and plan, the append-only credit ledger, and the Stripe events already processed.
 */
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { createdAt, ref } from "../db/columns";
import { workspaces } from "../workspace/tables";

export const plans = sqliteTable("plans", {
  slug: text("slug").primaryKey(),
  name: text("name").notNull(),
  monthlyCredits: integer("monthly_credits").notNull(),
  active: integer("active", { mode: "boolean" }).notNull().default(true),
  position: integer("position").notNull(),
  createdAt: createdAt(),
});

export const creditPacks = sqliteTable("credit_packs", {
  slug: text("slug").primaryKey(),
  name: text("name").notNull(),
  credits: integer("credits").notNull(),
  position: integer("position").notNull(),
  createdAt: createdAt(),
});

/**
 * A workspace's billing state; no row means the `free` plan and no Stripe customer. The
 * customer id is the only thing kept about the payer; it is claimed once per workspace.
 */
export const billingAccounts = sqliteTable("billing_accounts", {
  workspaceId: text("workspace_id")
    .primaryKey()
    .references(() => workspaces.id),
  planSlug: text("plan_slug")
    .notNull()
    .default("free")
    .references(() => plans.slug),
  /** Stripe's subscription status, or `none` when the workspace never subscribed. */
  status: text("status").notNull().default("none"),
  currentPeriodEnd: text("current_period_end"),
  stripeCustomerId: text("stripe_customer_id").unique(),
  stripeSubscriptionId: text("stripe_subscription_id"),
  updatedAt: text("updated_at").notNull(),
});

/**
 * Append-only; the balance is the sum of `amount` (kept in `creditBalances`). A (workspace,
 * kind, reference) is written once.
 */
export const creditLedger = sqliteTable(
  "credit_ledger",
  {
    id: text("id").primaryKey(),
    workspaceId: ref("workspace_id", () => workspaces.id),
    amount: integer("amount").notNull(),
    kind: text("kind", {
      enum: ["monthly_grant", "plan_grant", "topup", "usage", "refund", "dispute", "adjustment"],
    }).notNull(),
    reference: text("reference").notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex("credit_ledger_reference_idx").on(t.workspaceId, t.kind, t.reference),
    // Newest-first listing by id, and the balance SUM without touching the table.
    index("credit_ledger_workspace_idx").on(t.workspaceId, t.id, t.amount),
  ],
);

/**
 * Each workspace's balance, the sum of its ledger's amounts: kept by triggers on
 * `credit_ledger` (migration 0021), whoever writes a row, so a credit check reads one row
 * however long the ledger grows. No row: a balance of 0.
 */
export const creditBalances = sqliteTable("credit_balances", {
  workspaceId: text("workspace_id")
    .primaryKey()
    .references(() => workspaces.id),
  balance: integer("balance").notNull(),
});

/** Stripe events already processed, written in the same batch as their effect. */
export const stripeEvents = sqliteTable("stripe_events", {
  id: text("id").primaryKey(),
  type: text("type").notNull(),
  workspaceId: text("workspace_id"),
  receivedAt: text("received_at").notNull(),
});
