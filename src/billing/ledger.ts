import { type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { d1Statement } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { ApiError, badRequest } from "../platform/problem";
import { listPacks } from "./catalogue";
import type { LedgerEntry } from "./schemas";

/**
 * The credit ledger: the one module the rest of the service calls to check and spend
 * credits. Append-only; the balance is the sum of the amounts. D1 has no interactive
 * transactions, so every rule here is kept by a unique index and single statements:
 * a (workspace, kind, reference) is written once, whoever races.
 */

const DEFAULT_FREE_MONTHLY_CREDITS = 100;

export function freeMonthlyCredits(env: Env): number {
  const n = Number(env.FREE_MONTHLY_CREDITS);
  return env.FREE_MONTHLY_CREDITS !== undefined && Number.isSafeInteger(n) && n >= 0 ? n : DEFAULT_FREE_MONTHLY_CREDITS;
}

/** `free:YYYY-MM` of the calendar month (UTC) of `now`. */
export const monthlyGrantReference = (now: Date) => `free:${now.toISOString().slice(0, 7)}`;

// The grant is made only while the workspace is on the free plan (no billing row means free).
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

type GrantRow = { id: string; amount: number; reference: string };

/**
 * This month's free grant and its event, for one batch: the event is written only when the
 * grant row was (the first request of the month on the free plan).
 */
function grantStatements(env: Env, workspaceId: string, now: Date): D1PreparedStatement[] {
  const id = newId();
  const amount = freeMonthlyCredits(env);
  const reference = monthlyGrantReference(now);
  const event: AuditEventInput = {
    workspaceId: workspaceId,
    kind: "billing.credit",
    actor: { kind: "system", id: null },
    target: `ledger:${id}`,
    intent: "grant",
    details: { ledger_kind: "monthly_grant", amount, reference, plan_slug: "free" },
  };
  return [
    env.DB.prepare(GRANT_SQL).bind(id, workspaceId, amount, reference, now.toISOString()),
    d1Statement(env, auditInBatch(env, event, { onlyIf: PREVIOUS_STATEMENT_CHANGED })),
  ];
}

/** The workspace's balance: one indexed SUM. */
export async function balance(env: Env, workspaceId: string): Promise<number> {
  const row = await env.DB.prepare(BALANCE_SQL).bind(workspaceId).first<{ balance: number }>();
  return row?.balance ?? 0;
}

/**
 * Makes this month's free grant (`free:YYYY-MM`) if the workspace is on the free plan and
 * has none yet; returns the entry when this call made it. Exactly once per month however
 * many requests race to be first.
 */
export async function ensureMonthlyGrant(
  env: Env,
  workspaceId: string,
  now = new Date(),
): Promise<{ id: string; amount: number } | null> {
  const [grant] = await env.DB.batch<GrantRow>(grantStatements(env, workspaceId, now));
  const row = grant?.results[0];
  return row ? { id: row.id, amount: row.amount } : null;
}

/** `ensureMonthlyGrant` and `balance` in one round trip. */
export async function grantedBalance(env: Env, workspaceId: string, now = new Date()): Promise<number> {
  const [, , sum] = await env.DB.batch<GrantRow | { balance: number }>([
    ...grantStatements(env, workspaceId, now),
    env.DB.prepare(BALANCE_SQL).bind(workspaceId),
  ]);
  return (sum?.results[0] as { balance: number } | undefined)?.balance ?? 0;
}

/**
 * Call before a paid action: returns the balance, or throws the 402 problem
 * (`insufficient_credits`, with `balance` and `packs`) when nothing is left. There is no
 * lock across the action, so concurrent actions may take the balance below zero by at most
 * one action each.
 */
export async function requireCredits(env: Env, workspaceId: string): Promise<number> {
  const left = await grantedBalance(env, workspaceId);
  if (left > 0) return left;
  throw new ApiError(
    402,
    "insufficient_credits",
    "The workspace has no credits left; buy a credit pack or upgrade the plan",
    undefined,
    undefined,
    { balance: left, packs: await listPacks(env) },
  );
}

/**
 * Spends `amount` credits for `reference` (e.g. a turn id). Idempotent on the reference: a
 * second call with the same reference records nothing and returns `debited: false`.
 */
export async function debit(
  env: Env,
  workspaceId: string,
  amount: number,
  reference: string,
): Promise<{ debited: boolean }> {
  const row = await debitStatement(env, workspaceId, amount, reference).first();
  return { debited: row !== null };
}

/** `debit` as a statement, for a batch that records what the credits paid for (a turn's reply). */
export function debitStatement(env: Env, workspaceId: string, amount: number, reference: string): D1PreparedStatement {
  if (!Number.isSafeInteger(amount) || amount <= 0)
    throw badRequest("invalid_amount", "amount must be a positive integer");
  if (!reference || reference.length > 200) throw badRequest("invalid_reference", "reference must be 1-200 characters");
  return env.DB.prepare(DEBIT_SQL).bind(newId(), workspaceId, -amount, reference, nowIso());
}

/** The newest `limit` entries, newest first. */
export async function entries(env: Env, workspaceId: string, limit: number): Promise<LedgerEntry[]> {
  const { results } = await env.DB.prepare(
    "SELECT id, amount, kind, reference, created_at FROM credit_ledger WHERE workspace_id = ?1 ORDER BY id DESC LIMIT ?2",
  )
    .bind(workspaceId, limit)
    .all<LedgerEntry>();
  return results;
}
