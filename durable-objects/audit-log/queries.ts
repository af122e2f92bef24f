import { and, desc, eq, gte, type SQL, sql } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { literalLimit } from "../../src/platform/limit";
import type * as schema from "./schema";
import { events } from "./schema";
import type { ActorKind, AuditEvent, AuditOutcome, ListFilters, ListPage, ListResult } from "./types";

type Db = DrizzleSqliteDODatabase<typeof schema>;

/** One page of events, newest first, and how many match the filters. */
export function listEvents(db: Db, filters: ListFilters, page: ListPage): ListResult {
  const where = and(...conditions(filters));
  const total = db.select({ n: sql<number>`count(*)` }).from(events).where(where).get()?.n ?? 0;
  const rows = db
    .select()
    .from(events)
    .where(where)
    .orderBy(desc(events.seq))
    .limit(literalLimit(page.pageSize))
    .offset((page.page - 1) * page.pageSize)
    .all();
  return { events: rows.map(toEvent), total };
}

function conditions(f: ListFilters): SQL[] {
  const c: SQL[] = [];
  // A lookback reaching before 1970 holds every event (and huge ones are not a valid Date).
  const since = Date.now() - f.days * 86_400_000;
  if (f.days > 0 && since > 0) c.push(gte(events.occurredAt, new Date(since).toISOString()));
  if (f.kind) c.push(eq(events.kind, f.kind));
  if (f.outcome) c.push(eq(events.outcome, f.outcome));
  if (f.actorKind) c.push(eq(events.actorKind, f.actorKind));
  if (f.agentId) c.push(eq(events.agentId, f.agentId));
  if (f.conversationId) c.push(eq(events.conversationId, f.conversationId));
  if (f.q) {
    // A substring test without a pattern: SQLite refuses LIKE patterns over 50 bytes, which a
    // 25-character query of two-byte letters already reaches, and `instr` has no wildcards to escape.
    const needle = f.q.toLowerCase();
    c.push(sql`(instr(lower(${events.target}), ${needle}) > 0 OR instr(lower(${events.intent}), ${needle}) > 0)`);
  }
  return c;
}

export function toEvent(r: typeof events.$inferSelect): AuditEvent {
  return {
    seq: r.seq,
    id: r.id,
    occurred_at: r.occurredAt,
    kind: r.kind,
    outcome: r.outcome as AuditOutcome,
    actor_kind: r.actorKind as ActorKind,
    actor_id: r.actorId,
    agent_id: r.agentId,
    conversation_id: r.conversationId,
    target: r.target,
    intent: r.intent,
    details: r.details,
    details_digest: r.detailsDigest,
    prev_hash: r.prevHash,
    hash: r.hash,
  };
}
