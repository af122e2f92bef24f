import { type SQL, sql } from "drizzle-orm";
import { auditOutbox } from "../../src/db/schema";
import { type Db, db } from "../../src/platform/db";
import { nowIso } from "../../src/platform/env";
import { newId } from "../../src/platform/ids";
import { auditLog } from "./client";
import { allowedDetails } from "./policy";
import type { ActorKind, AppendEvent, AuditOutcome } from "./types";

/** An event as its author describes it; `auditEvent` makes it the log's entry. */
export type RecordInput = {
  /** Dotted, e.g. `agent.update`. */
  kind: string;
  actor: { kind: ActorKind; id: string | null };
  outcome?: AuditOutcome;
  /** What was acted on, as `type:id` (ids only, never personal data). */
  target?: string;
  /** The verb; defaults to the last part of `kind`. Never personal data. */
  intent?: string;
  agentId?: string | null;
  conversationId?: string | null;
  /** The user the event is about (for erasure). */
  subjectUserId?: string | null;
  /** Reduced to the kind's allow-list before it leaves the Worker. */
  details?: Record<string, unknown>;
};

export function auditEvent(input: RecordInput): AppendEvent {
  return {
    kind: input.kind,
    outcome: input.outcome ?? "success",
    actorKind: input.actor.kind,
    actorId: input.actor.id,
    agentId: input.agentId ?? null,
    conversationId: input.conversationId ?? null,
    target: input.target ?? "",
    intent: input.intent ?? input.kind.split(".").pop() ?? "",
    subjectUserId: input.subjectUserId ?? null,
    details: allowedDetails(input.kind, input.details),
    occurredAt: nowIso(),
  };
}

/** An event as the `audit_outbox` row that carries it into the chain. */
export type OutboxEntry = typeof auditOutbox.$inferInsert;

/**
 * The outbox row of an event. Written in the same D1 batch as the change it records
 * (`outboxInsert` for Drizzle batches, `outboxStatement` for raw ones), so the change and its
 * event commit together or not at all; `deliverAudit` then moves it into the chain.
 */
export function outboxEntry(workspaceId: string, input: RecordInput): OutboxEntry {
  return { id: newId(), workspaceId, event: JSON.stringify(auditEvent(input)), createdAt: nowIso() };
}

export const outboxInsert = (d: Db, entry: OutboxEntry) => d.insert(auditOutbox).values(entry);

/**
 * In a batch whose change may turn out to be nothing (a conditional UPDATE that matched no
 * row), the event row is written only when `onlyIf` holds at that point of the batch.
 * `PREVIOUS_STATEMENT_CHANGED` is the usual condition: place the insert right after the change.
 * `detailsFromSql` fills detail fields read inside the same transaction (for example the
 * previous holder of a flag the batch moves).
 */
export function outboxInsertIf(d: Db, entry: OutboxEntry, onlyIf: SQL, detailsFromSql: Record<string, SQL> = {}) {
  let event = sql`${entry.event}`;
  for (const [field, value] of Object.entries(detailsFromSql))
    event = sql`json_set(${event}, ${`$.details.${field}`}, ${value})`;
  // Every column, in the table's order: Drizzle's INSERT … SELECT names them all.
  return d
    .insert(auditOutbox)
    .select(sql`SELECT ${entry.id}, ${entry.workspaceId}, ${event}, ${entry.createdAt}, 0, NULL WHERE ${onlyIf}`);
}

/** A JSON boolean from an SQL condition, for `detailsFromSql`. */
export const jsonBoolean = (condition: SQL) => sql`json(CASE WHEN ${condition} THEN 'true' ELSE 'false' END)`;

/** True right after a statement of the same batch that inserted, updated or deleted a row. */
export const PREVIOUS_STATEMENT_CHANGED = sql`changes() > 0`;

/** `outboxInsert` for raw D1 batches; `onlyIf` as in `outboxInsertIf` (SQL text, e.g. "changes() > 0"). */
export const outboxStatement = (env: Env, entry: OutboxEntry, onlyIf = "1"): D1PreparedStatement =>
  env.DB.prepare(
    `INSERT INTO audit_outbox (id, workspace_id, event, created_at) SELECT ?, ?, ?, ? WHERE ${onlyIf}`,
  ).bind(entry.id, entry.workspaceId, entry.event, entry.createdAt);

/**
 * For a raw batch whose change names its workspace only in the database (the grant behind a
 * token hash): the event row is selected by `from` (a `FROM … WHERE …` clause over rows the
 * batch wrote, using parameters ?4, ?5, … bound from `binds`), its workspace is the SQL
 * expression `workspaceId`, and `fields` set event fields (JSON paths such as `$.target`) from
 * SQL expressions over the same rows. No row selected, no event.
 */
export function outboxStatementFrom(
  env: Env,
  entry: OutboxEntry,
  source: { workspaceId: string; from: string; fields?: Record<string, string>; idSuffix?: string },
  ...binds: unknown[]
): D1PreparedStatement {
  const sets = Object.entries(source.fields ?? {}).map(([path, expr]) => `, '${path}', ${expr}`);
  // Several rows selected (one event each): `idSuffix` keeps their ids distinct and in order.
  const id = source.idSuffix ? `?1 || ':' || ${source.idSuffix}` : "?1";
  return env.DB.prepare(
    `INSERT INTO audit_outbox (id, workspace_id, event, created_at)
     SELECT ${id}, ${source.workspaceId}, json_set(?2${sets.join("")}), ?3 ${source.from}`,
  ).bind(entry.id, entry.event, entry.createdAt, ...binds);
}

/**
 * Moves the workspace's committed outbox rows into its chain. A failure is logged and left to
 * the next delivery (the every-minute cron is the safety net): the rows are already durable.
 */
export async function deliverAudit(env: Env, workspaceId: string): Promise<void> {
  try {
    await auditLog(env, workspaceId).deliver(workspaceId);
  } catch (error) {
    console.error(
      JSON.stringify({ level: "error", msg: "audit delivery failed; rows wait in the outbox", error: String(error) }),
    );
  }
}

/** Rounds one delivery loop runs before it leaves the rest to the next request (or the cron). */
const LOOP_ROUNDS = 50;
/**
 * How long a round waits before it reads the outbox: rows of the requests committing meanwhile
 * join it, so under load one round (one call, one D1 read and one delete) carries many events.
 */
const ROUND_DELAY_MS = 100;
/** Per isolate: workspaces whose delivery loop is running, and whether rows were committed since its round began. */
const loops = new Map<string, { again: boolean }>();

/**
 * Delivery after a commit, shared by the requests of one isolate: the first starts a loop (the
 * promise to hand to `waitUntil`), the others only mark that more rows wait and get null. The
 * loop runs another round while rows keep arriving, so under load one call to the object
 * delivers many requests' events; no request waits on another's promise.
 */
export function deliverAfterCommit(env: Env, workspaceId: string): Promise<void> | null {
  const running = loops.get(workspaceId);
  if (running) {
    running.again = true;
    return null;
  }
  const loop = { again: false };
  loops.set(workspaceId, loop);
  return (async () => {
    try {
      for (let round = 0; round < LOOP_ROUNDS; round++) {
        await new Promise((resolve) => setTimeout(resolve, ROUND_DELAY_MS));
        loop.again = false;
        await deliverAudit(env, workspaceId);
        if (!loop.again) return;
      }
    } finally {
      loops.delete(workspaceId);
    }
  })();
}

/**
 * Records an event that no D1 change accompanies (a refusal, a disconnect seen by an object,
 * a queue or cron step whose change is elsewhere): its outbox row alone, then delivery.
 */
export async function record(env: Env, workspaceId: string, input: RecordInput): Promise<void> {
  await outboxInsert(db(env), outboxEntry(workspaceId, input)).run();
  await deliverAudit(env, workspaceId);
}
