import { DurableObject } from "cloudflare:workers";
import { and, desc, eq, gte, or, sql, type SQL } from "drizzle-orm";
import { drizzle, type DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { migrate } from "drizzle-orm/durable-sqlite/migrator";
import { uuidv7 } from "uuidv7";
import { canonicalJson, detailsDigest, entryHash, GENESIS_HASH, newSalt } from "./audit-log/chain";
import migrations from "./audit-log/migrations/migrations.js";
import * as schema from "./audit-log/schema";
import { events } from "./audit-log/schema";
import type { AppendEvent, AuditEvent, ListFilters, ListPage, ListResult, VerifyResult } from "./audit-log/types";

const REDACTED_DETAILS = canonicalJson({ redacted: true });

const INSERT_EVENT = `INSERT INTO events (seq, id, occurred_at, kind, outcome, actor_kind, actor_id, agent_id,
  conversation_id, target, intent, subject_user_id, details, salt, details_digest, prev_hash, hash)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

type Written = { seq: number; hash: string };
type PendingAppend = { batch: AppendEvent[]; resolve: (written: Written[]) => void; reject: (error: unknown) => void };

/**
 * One per workspace: the single writer of that workspace's tamper-evident audit chain.
 * Appends are synchronous from reading the head to writing the row (hashing with
 * @noble/hashes, inside one storage transaction), so concurrent appends cannot fork it;
 * appends that arrive together share that transaction.
 */
export class AuditLog extends DurableObject<Env> {
  private readonly db: DrizzleSqliteDODatabase<typeof schema>;
  private head = { seq: 0, hash: GENESIS_HASH };
  /** Appends received since the last flush, written together by the next one. */
  private pending: PendingAppend[] = [];

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.db = drizzle(ctx.storage, { schema });
    void ctx.blockConcurrencyWhile(async () => {
      await migrate(this.db, migrations);
      this.head = this.readHead();
    });
  }

  /**
   * Appends events in order; resolves with their sequence numbers and hashes. Appends that
   * arrive together (before the object's next macrotask) are written in one storage
   * transaction, so concurrent writers share a commit instead of paying one each.
   */
  append(batch: AppendEvent[]): Promise<Written[]> {
    return new Promise((resolve, reject) => {
      this.pending.push({ batch, resolve, reject });
      if (this.pending.length === 1) setTimeout(() => this.flush(), 0);
    });
  }

  /**
   * Writes every pending append in one transaction, each in its own savepoint so a failing
   * append rejects alone. Head read to last insert is synchronous: the chain cannot fork.
   */
  private flush(): void {
    const group = this.pending;
    this.pending = [];
    const outcomes: ({ ok: true; written: Written[] } | { ok: false; error: unknown })[] = [];
    try {
      this.ctx.storage.transactionSync(() => {
        for (const p of group) {
          try {
            outcomes.push({ ok: true, written: this.ctx.storage.transactionSync(() => this.write(p.batch)) });
          } catch (error) {
            outcomes.push({ ok: false, error });
          }
        }
      });
    } catch (error) {
      this.head = this.readHead();
      for (const p of group) p.reject(error);
      return;
    }
    group.forEach((p, i) => {
      const o = outcomes[i]!;
      if (o.ok) p.resolve(o.written);
      else p.reject(o.error);
    });
  }

  /** Hashes and inserts one append's events after the head; moves the head only once all are in. */
  private write(batch: AppendEvent[]): Written[] {
    let { seq, hash } = this.head;
    const written: Written[] = [];
    for (const e of batch) {
      seq += 1;
      const salt = newSalt();
      const details = canonicalJson(e.details);
      const row = {
        seq,
        id: uuidv7(),
        occurredAt: new Date().toISOString(),
        kind: e.kind,
        outcome: e.outcome,
        actorKind: e.actorKind,
        actorId: e.actorId,
        agentId: e.agentId,
        conversationId: e.conversationId,
        target: e.target,
        intent: e.intent,
        subjectUserId: e.subjectUserId,
        details,
        salt,
        detailsDigest: detailsDigest(salt, details),
        prevHash: hash,
        hash: "",
      };
      row.hash = entryHash(row);
      // Raw statement: building a Drizzle insert per row costs more than hashing the entry.
      this.ctx.storage.sql.exec(
        INSERT_EVENT,
        row.seq,
        row.id,
        row.occurredAt,
        row.kind,
        row.outcome,
        row.actorKind,
        row.actorId,
        row.agentId,
        row.conversationId,
        row.target,
        row.intent,
        row.subjectUserId,
        row.details,
        row.salt,
        row.detailsDigest,
        row.prevHash,
        row.hash,
      );
      hash = row.hash;
      written.push({ seq, hash });
    }
    this.head = { seq, hash };
    return written;
  }

  private readHead(): { seq: number; hash: string } {
    const last = this.db.select({ seq: events.seq, hash: events.hash }).from(events).orderBy(desc(events.seq)).limit(1).get();
    return last ?? { seq: 0, hash: GENESIS_HASH };
  }

  list(filters: ListFilters, page: ListPage): ListResult {
    const where = and(...conditions(filters));
    const total = this.db.select({ n: sql<number>`count(*)` }).from(events).where(where).get()?.n ?? 0;
    const rows = this.db
      .select()
      .from(events)
      .where(where)
      .orderBy(desc(events.seq))
      .limit(page.pageSize)
      .offset((page.page - 1) * page.pageSize)
      .all();
    return { events: rows.map(toEvent), total };
  }

  /**
   * Recomputes the last `limit` entries in ascending order. A stored hash that does not match
   * its recomputed content (or details that no longer match their digest) is a `content`
   * break; a prev_hash that is not the previous entry's hash is a `linkage` break. The entry
   * just before the window anchors the first prev_hash.
   */
  verify(limit: number): VerifyResult {
    const fromSeq = Math.max(1, this.head.seq - limit + 1);
    const anchor =
      fromSeq > 1
        ? this.db.select({ hash: events.hash }).from(events).where(eq(events.seq, fromSeq - 1)).get()?.hash
        : GENESIS_HASH;
    const cursor = this.ctx.storage.sql.exec<Record<string, string | number | null>>(
      `SELECT seq, occurred_at, kind, outcome, actor_kind, actor_id, agent_id, conversation_id, target, intent,
              details, salt, details_digest, prev_hash, hash
         FROM events WHERE seq >= ? ORDER BY seq`,
      fromSeq,
    );
    let expectedPrev = anchor ?? null;
    let expectedSeq = fromSeq;
    let checked = 0;
    let first: number | null = null;
    let last: number | null = null;
    for (const r of cursor) {
      const seq = r.seq as number;
      first ??= seq;
      last = seq;
      checked += 1;
      const fail = (breakType: "content" | "linkage"): VerifyResult => ({
        ok: false,
        checked,
        first_seq: first,
        last_seq: seq,
        failure_seq: seq,
        break_type: breakType,
      });
      if (seq !== expectedSeq || r.prev_hash !== expectedPrev) return fail("linkage");
      const salt = r.salt as string | null;
      if (salt !== null && detailsDigest(salt, r.details as string) !== r.details_digest) return fail("content");
      const recomputed = entryHash({
        seq,
        occurredAt: r.occurred_at as string,
        kind: r.kind as string,
        outcome: r.outcome as string,
        actorKind: r.actor_kind as string,
        actorId: r.actor_id as string | null,
        agentId: r.agent_id as string | null,
        conversationId: r.conversation_id as string | null,
        target: r.target as string,
        intent: r.intent as string,
        detailsDigest: r.details_digest as string,
        prevHash: r.prev_hash as string,
      });
      if (recomputed !== r.hash) return fail("content");
      expectedPrev = r.hash as string;
      expectedSeq = seq + 1;
    }
    return { ok: true, checked, first_seq: first, last_seq: last, failure_seq: null, break_type: null };
  }

  /**
   * Erasure: replaces the details of every event whose actor or subject is the user and drops
   * their salt. The digest, and so the chain, is kept: verify stays ok.
   */
  redactUser(userId: string): number {
    const result = this.db
      .update(events)
      .set({ details: REDACTED_DETAILS, salt: null })
      .where(and(or(eq(events.actorId, userId), eq(events.subjectUserId, userId)), sql`${events.salt} IS NOT NULL`))
      .run();
    return result.rowsWritten;
  }
}

function conditions(f: ListFilters): SQL[] {
  const c: SQL[] = [];
  if (f.days > 0) c.push(gte(events.occurredAt, new Date(Date.now() - f.days * 86_400_000).toISOString()));
  if (f.kind) c.push(eq(events.kind, f.kind));
  if (f.outcome) c.push(eq(events.outcome, f.outcome));
  if (f.actorKind) c.push(eq(events.actorKind, f.actorKind));
  if (f.agentId) c.push(eq(events.agentId, f.agentId));
  if (f.conversationId) c.push(eq(events.conversationId, f.conversationId));
  if (f.q) {
    const pattern = `%${f.q.toLowerCase().replace(/[\\%_]/g, (m) => `\\${m}`)}%`;
    c.push(sql`(lower(${events.target}) LIKE ${pattern} ESCAPE '\\' OR lower(${events.intent}) LIKE ${pattern} ESCAPE '\\')`);
  }
  return c;
}

function toEvent(r: typeof events.$inferSelect): AuditEvent {
  return {
    seq: r.seq,
    id: r.id,
    occurred_at: r.occurredAt,
    kind: r.kind,
    outcome: r.outcome,
    actor_kind: r.actorKind,
    actor_id: r.actorId,
    agent_id: r.agentId,
    conversation_id: r.conversationId,
    target: r.target,
    intent: r.intent,
    details: JSON.parse(r.details) as Record<string, unknown>,
    details_digest: r.detailsDigest,
    prev_hash: r.prevHash,
    hash: r.hash,
  };
}
