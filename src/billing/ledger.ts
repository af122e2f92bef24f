import { desc, eq, type Placeholder, sql } from "drizzle-orm";
import type { SQLiteInsertValue } from "drizzle-orm/sqlite-core";
import { type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { billingAccounts, creditBalances, creditLedger, workspaces } from "../db/schema";
import { type Db, db, preparedFor } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { literalLimit } from "../platform/limit";
import { ApiError, badRequest } from "../platform/problem";
import { listPacks } from "./catalogue";
import type { LedgerEntry } from "./schemas";

/**
 * The credit ledger: the one module the rest of the service calls to check and spend
 * credits. Append-only; the balance is the sum of the amounts, kept by triggers in
 * `credit_balances` (one row to read). D1 has no interactive transactions, so every rule
 * here is kept by a unique index and single statements:
 * a (workspace, kind, reference) is written once, whoever races.
 */

const DEFAULT_FREE_MONTHLY_CREDITS = 100;

export function freeMonthlyCredits(env: Env): number {
  const n = Number(env.FREE_MONTHLY_CREDITS);
  return env.FREE_MONTHLY_CREDITS !== undefined && Number.isSafeInteger(n) && n >= 0 ? n : DEFAULT_FREE_MONTHLY_CREDITS;
}

/** `free:YYYY-MM` of the calendar month (UTC) of `now`. */
export const monthlyGrantReference = (now: Date) => `free:${now.toISOString().slice(0, 7)}`;

type Bound<T> = T | Placeholder;

/** The workspace is on the free plan (no billing row means free): only then is the monthly grant made. */
const onFreePlan = (workspaceId: Bound<string>) =>
  sql`COALESCE((SELECT ${billingAccounts.planSlug} FROM ${billingAccounts} WHERE ${billingAccounts.workspaceId} = ${workspaceId}), 'free') = 'free'`;

function grantInsert(
  d: Db,
  id: Bound<string>,
  workspaceId: Bound<string>,
  amount: Bound<number>,
  reference: Bound<string>,
  at: Bound<string>,
) {
  return d
    .insert(creditLedger)
    .select(
      sql`SELECT ${id}, ${workspaceId}, ${amount}, 'monthly_grant', ${reference}, ${at}
        WHERE ${amount} > 0 AND ${onFreePlan(workspaceId)}`,
    )
    .onConflictDoNothing()
    .returning({ id: creditLedger.id, amount: creditLedger.amount });
}

/** The workspace's balance as SQL: its one `credit_balances` row (kept by triggers), 0 without one. */
const balanceSql = (workspaceId: Bound<string>) =>
  sql<number>`COALESCE((SELECT ${creditBalances.balance} FROM ${creditBalances}
    WHERE ${creditBalances.workspaceId} = ${workspaceId}), 0)`;

const balanceOf = (d: Db, workspaceId: Bound<string>) =>
  d
    .select({ balance: balanceSql(workspaceId) })
    .from(workspaces)
    .where(eq(workspaces.id, workspaceId));

type DebitValues = Pick<
  SQLiteInsertValue<typeof creditLedger>,
  "id" | "workspaceId" | "amount" | "reference" | "createdAt"
>;

const debitQuery = (d: Db, values: DebitValues) =>
  d
    .insert(creditLedger)
    .values({ ...values, kind: "usage" })
    .onConflictDoNothing()
    .returning({ id: creditLedger.id });

// The balance and the debit are a paid action's own cost (`npm run bench -- billing`): prepared once.
const statements = preparedFor((d) => ({
  balance: balanceOf(d, sql.placeholder("workspaceId")).prepare(),
  check: preparedCreditCheck(d),
  debit: debitQuery(d, {
    id: sql.placeholder("id"),
    workspaceId: sql.placeholder("workspaceId"),
    amount: sql.placeholder("amount"),
    reference: sql.placeholder("reference"),
    createdAt: sql.placeholder("createdAt"),
  }).prepare(),
}));

/**
 * This month's free grant and its event, for one batch: the event is written only when the
 * grant row was (the first request of the month on the free plan).
 */
function grantQueries(env: Env, workspaceId: string, now: Date) {
  const { id, amount, reference, event } = grantOf(env, workspaceId, now);
  return [
    grantInsert(db(env), id, workspaceId, amount, reference, now.toISOString()),
    auditInBatch(env, event, { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
  ] as const;
}

/** This month's free grant as a new ledger row, and its event. */
function grantOf(env: Env, workspaceId: string, now: Date) {
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
  return { id, amount, reference, event };
}

/** The workspace's balance: one row. */
export async function balance(env: Env, workspaceId: string): Promise<number> {
  const row = await statements(env).balance.get({ workspaceId });
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
  const [granted] = await db(env).batch(grantQueries(env, workspaceId, now));
  return granted[0] ?? null;
}

/**
 * The balance, this month's free grant made first when it is due: one read, and the grant's own
 * round trip (the grant, its event, the balance) on the workspace's first use of the month.
 */
export async function grantedBalance(env: Env, workspaceId: string, now = new Date()): Promise<number> {
  const read = await statements(env).check.get(creditCheckValues(env, workspaceId, now));
  return checkedBalance(env, workspaceId, read, now);
}

/**
 * Call before a paid action: returns the balance, or throws the 402 problem
 * (`insufficient_credits`, with `balance` and `packs`) when nothing is left. There is no
 * lock across the action, so concurrent actions may take the balance below zero by at most
 * one action each.
 */
export async function requireCredits(env: Env, workspaceId: string, now = new Date()): Promise<number> {
  return creditsLeft(env, await grantedBalance(env, workspaceId, now));
}

/**
 * The balance, and whether this month's free grant is still to be made (the workspace is on
 * the free plan and has none for `reference`), as two columns of one statement (another area's
 * too: see the turn's preflight): a read, so a paid action's check writes nothing on all but its
 * month's first request, and can be served by a read replica. Then `checkedBalance`.
 */
export function creditCheckColumns(workspaceId: Bound<string>, amount: Bound<number>, reference: Bound<string>) {
  const granted = sql`SELECT 1 FROM ${creditLedger} WHERE ${creditLedger.workspaceId} = ${workspaceId}
    AND ${creditLedger.kind} = 'monthly_grant' AND ${creditLedger.reference} = ${reference}`;
  return {
    balance: balanceSql(workspaceId),
    grantDue: sql<number>`${amount} > 0 AND ${onFreePlan(workspaceId)} AND NOT EXISTS (${granted})`,
  };
}

export type CreditCheck = { balance: number; grantDue: number };

/** `creditCheckColumns` bound from `creditCheckValues`, as a statement prepared once. */
function preparedCreditCheck(d: Db) {
  const workspaceId = sql.placeholder("workspaceId");
  return d
    .select(creditCheckColumns(workspaceId, sql.placeholder("grantAmount"), sql.placeholder("grantReference")))
    .from(workspaces)
    .where(eq(workspaces.id, workspaceId))
    .prepare();
}

/** The values of `creditCheckColumns`' placeholders for a workspace. */
export function creditCheckValues(env: Env, workspaceId: string, now = new Date()) {
  return { workspaceId, grantAmount: freeMonthlyCredits(env), grantReference: monthlyGrantReference(now) };
}

/** The balance a credit check read; when this month's grant was due, it is made first (once a month). */
export async function checkedBalance(env: Env, workspaceId: string, row: CreditCheck | undefined, now = new Date()) {
  if (!row?.grantDue) return row?.balance ?? 0;
  const d = db(env);
  const [, , sum] = await d.batch([...grantQueries(env, workspaceId, now), balanceOf(d, workspaceId)]);
  return sum[0]?.balance ?? 0;
}

/** The balance, or the 402 problem (`insufficient_credits`) when nothing is left. */
export async function creditsLeft(env: Env, left: number): Promise<number> {
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
  const rows = await statements(env).debit.all(debitRow(workspaceId, amount, reference));
  return { debited: rows.length > 0 };
}

/** `debit` as a query, for a batch that records what the credits paid for (a turn's or a mail's reply). */
export function debitInsert(env: Env, workspaceId: string, amount: number, reference: string) {
  return debitQuery(db(env), debitRow(workspaceId, amount, reference));
}

/**
 * `debitInsert` prepared once (see `batchPrepared`), for another area's hot batch; bound from
 * `debitValues`.
 */
export function preparedDebit(d: Db) {
  return debitQuery(d, {
    id: sql.placeholder("debitId"),
    workspaceId: sql.placeholder("workspaceId"),
    amount: sql.placeholder("debitAmount"),
    reference: sql.placeholder("debitReference"),
    createdAt: sql.placeholder("debitAt"),
  }).prepare();
}

/** The values of `preparedDebit`'s statement: `amount` credits spent for `reference`. */
export function debitValues(workspaceId: string, amount: number, reference: string) {
  const row = debitRow(workspaceId, amount, reference);
  return {
    workspaceId,
    debitId: row.id,
    debitAmount: row.amount,
    debitReference: row.reference,
    debitAt: row.createdAt,
  };
}

function debitRow(workspaceId: string, amount: number, reference: string) {
  if (!Number.isSafeInteger(amount) || amount <= 0)
    throw badRequest("invalid_amount", "amount must be a positive integer");
  if (!reference || reference.length > 200) throw badRequest("invalid_reference", "reference must be 1-200 characters");
  return { id: newId(), workspaceId, amount: -amount, reference, createdAt: nowIso() };
}

/** The newest `limit` entries, newest first. */
export async function entries(env: Env, workspaceId: string, limit: number): Promise<LedgerEntry[]> {
  return db(env)
    .select({
      id: creditLedger.id,
      amount: creditLedger.amount,
      kind: creditLedger.kind,
      reference: creditLedger.reference,
      created_at: creditLedger.createdAt,
    })
    .from(creditLedger)
    .where(eq(creditLedger.workspaceId, workspaceId))
    .orderBy(desc(creditLedger.id))
    .limit(literalLimit(limit))
    .all();
}
