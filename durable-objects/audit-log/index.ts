import { DurableObject } from "cloudflare:workers";
import { Buffer } from "node:buffer";
import { and, desc, eq, gte, type SQL, sql } from "drizzle-orm";
import { type DrizzleSqliteDODatabase, drizzle } from "drizzle-orm/durable-sqlite";
import { migrate } from "drizzle-orm/durable-sqlite/migrator";
import { uuidv7 } from "uuidv7";
import { nowIso } from "../../src/platform/env";
import {
  type ChainFields,
  canonicalJson,
  detailsDigest,
  detailsMatch,
  encodedEntryHash,
  encodeEntry,
  GENESIS_HASH,
  newSalts,
  utf8Sha256,
} from "./chain";
import { appendLeaf, consistencyProof, inclusionProof, leafHash, type NodeStore, rootHash } from "./merkle";
import migrations from "./migrations/migrations.js";
import * as schema from "./schema";
import { events } from "./schema";
import { equalsHex } from "./sha256";
import type {
  ActorKind,
  AppendEvent,
  AuditEvent,
  AuditOutcome,
  CheckpointHead,
  ConsistencyProof,
  InclusionProof,
  ListFilters,
  ListPage,
  ListResult,
  VerifyResult,
  WitnessRecord,
} from "./types";

const REDACTED_DETAILS = canonicalJson({ redacted: true });

const INSERT_EVENT = `INSERT INTO events (seq, id, occurred_at, kind, outcome, actor_kind, actor_id, agent_id,
  conversation_id, target, intent, subject_user_id, details, salt, details_digest, prev_hash, hash, outbox_id)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;

/** The hashed columns of the chain, in `chainRow`'s order. */
const SELECT_CHAIN_ROWS = `SELECT seq, occurred_at, kind, outcome, actor_kind, actor_id, agent_id, conversation_id,
  target, intent, details, salt, details_digest, prev_hash, hash FROM events WHERE seq >= ? AND seq <= ? ORDER BY seq`;
const VERIFY_CHUNK = 10_000;
const SELECT_DELIVERED = "SELECT outbox_id, seq, hash FROM events WHERE outbox_id IN (SELECT value FROM json_each(?))";

type ChainRow = ChainFields & { details: string; salt: string | null; hash: string };

// Raw rows (arrays) are read: building an object per row costs about as much as reading it.
const chainRow = (r: SqlStorageValue[]): ChainRow => ({
  seq: r[0] as number,
  occurredAt: r[1] as string,
  kind: r[2] as string,
  outcome: r[3] as string,
  actorKind: r[4] as string,
  actorId: r[5] as string | null,
  agentId: r[6] as string | null,
  conversationId: r[7] as string | null,
  target: r[8] as string,
  intent: r[9] as string,
  details: r[10] as string,
  salt: r[11] as string | null,
  detailsDigest: r[12] as string,
  prevHash: r[13] as string,
  hash: r[14] as string,
});

type Written = { seq: number; hash: string };
/**
 * What an append will write (its rows, in INSERT_EVENT's order, and their Merkle leaf hashes),
 * where it lands, and the head after it.
 */
type Plan = { rows: SqlStorageValue[][]; leaves: Uint8Array[]; written: Written[]; head: Written } | { error: unknown };

/** An event's row after `prevHash` (in INSERT_EVENT's order) and its hash: salted details digest, then the entry hash. */
function newRow(e: AppendEvent, seq: number, prevHash: string, salt: string, now: string) {
  const details = canonicalJson(e.details);
  const f: ChainFields = {
    seq,
    occurredAt: e.occurredAt ?? now,
    kind: e.kind,
    outcome: e.outcome,
    actorKind: e.actorKind,
    actorId: e.actorId,
    agentId: e.agentId,
    conversationId: e.conversationId,
    target: e.target,
    intent: e.intent,
    detailsDigest: detailsDigest(salt, details),
    prevHash,
  };
  const entry = encodeEntry(f);
  const hash = encodedEntryHash(entry);
  const row: SqlStorageValue[] = [
    seq,
    uuidv7(),
    f.occurredAt,
    f.kind,
    f.outcome,
    f.actorKind,
    f.actorId,
    f.agentId,
    f.conversationId,
    f.target,
    f.intent,
    e.subjectUserId,
    details,
    salt,
    f.detailsDigest,
    prevHash,
    hash,
    e.outboxId ?? null,
  ];
  return { row, hash, leaf: leafHash(entry) };
}

type PendingAppend = { batch: AppendEvent[]; resolve: (written: Written[]) => void; reject: (error: unknown) => void };

/**
 * One per workspace: the single writer of that workspace's tamper-evident audit chain.
 * Appends are synchronous from reading the head to writing the row (native SHA-256 through
 * node:crypto, inside one storage transaction), so concurrent appends cannot fork it;
 * appends that arrive together share that transaction.
 */
export class AuditLog extends DurableObject<Env> {
  private readonly db: DrizzleSqliteDODatabase<typeof schema>;
  private head = { seq: 0, hash: GENESIS_HASH };
  /** Appends received since the last flush, written together by the next one. */
  private pending: PendingAppend[] = [];

  private readonly tree: TreeStore;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.db = drizzle(ctx.storage, { schema });
    this.tree = sqlNodeStore(ctx.storage.sql);
    void ctx.blockConcurrencyWhile(async () => {
      await migrate(this.db, migrations);
      this.head = this.readHead();
      this.catchUpTree();
    });
  }

  /**
   * Adds the leaves of entries the tree lacks: a chain written before the tree existed gets
   * its tree when its object first wakes. Afterwards every append adds its leaves itself.
   */
  private catchUpTree(): void {
    const size = this.ctx.storage.sql
      // max over the primary key, not count(*): one index lookup on every wake, not a scan.
      .exec<{ n: number }>("SELECT coalesce(max(idx) + 1, 0) AS n FROM tree_nodes WHERE level = 0")
      .one().n;
    for (let lo = size + 1; lo <= this.head.seq; lo += VERIFY_CHUNK) {
      const rows = [
        ...this.ctx.storage.sql.exec(SELECT_CHAIN_ROWS, lo, Math.min(this.head.seq, lo + VERIFY_CHUNK - 1)).raw(),
      ].map(chainRow);
      this.ctx.storage.transactionSync(() => {
        for (const r of rows) appendLeaf(this.tree, r.seq - 1, leafHash(encodeEntry(r)));
        this.tree.write();
      });
    }
  }

  /** The tree's size (= the head's seq) and root hash, base64. */
  treeHead(): { size: number; root: string } {
    return { size: this.head.seq, root: base64(rootHash(this.tree, this.head.seq)) };
  }

  /**
   * The tree head and what the given witnesses hold of it. With `now` (ms), `round_due` is true
   * (and the round is claimed) when a witness lacks this head and no round was queued in the last minute.
   */
  checkpointHead(witnessKeys: string[], now: number | null): CheckpointHead {
    const { size, root } = this.treeHead();
    const sql = this.ctx.storage.sql;
    const witnesses = sql
      .exec<WitnessRecord>(
        "SELECT * FROM witnesses WHERE witness IN (SELECT value FROM json_each(?))",
        JSON.stringify(witnessKeys),
      )
      .toArray();
    const behind = witnessKeys.some((key) => {
      const w = witnesses.find((r) => r.witness === key);
      return !w || w.size !== size || w.root !== root || w.conflict_at !== null;
    });
    let roundDue = false;
    if (now !== null && size > 0 && behind) {
      const last = sql.exec<{ queued_at: number }>("SELECT queued_at FROM witness_rounds WHERE id = 1").toArray()[0];
      if (!last || now - last.queued_at >= WITNESS_ROUND_INTERVAL_MS || now < last.queued_at) {
        sql.exec("INSERT OR REPLACE INTO witness_rounds (id, queued_at) VALUES (1, ?)", now);
        roundDue = true;
      }
    }
    return { size, root, witnesses, round_due: roundDue };
  }

  /** A witness cosigned the checkpoint of `size` and `root`: its next add-checkpoint starts there. */
  recordCosignature(witness: string, size: number, root: string, cosignature: string): void {
    this.ctx.storage.sql.exec(
      `INSERT INTO witnesses (witness, size, root, cosignature) VALUES (?1, ?2, ?3, ?4)
       ON CONFLICT (witness) DO UPDATE SET size = ?2, root = ?3, cosignature = ?4, conflict_size = NULL, conflict_at = NULL`,
      witness,
      size,
      root,
      cosignature,
    );
  }

  /** A witness refused our checkpoint (409); true when it was not refusing already (the alert is due). */
  recordConflict(witness: string, size: number | null, at: string): boolean {
    const was = this.ctx.storage.sql
      .exec<{ c: number | null }>("SELECT conflict_at AS c FROM witnesses WHERE witness = ?", witness)
      .toArray()[0];
    this.ctx.storage.sql.exec(
      `INSERT INTO witnesses (witness, conflict_size, conflict_at) VALUES (?1, ?2, ?3)
       ON CONFLICT (witness) DO UPDATE SET conflict_size = ?2, conflict_at = coalesce(conflict_at, ?3)`,
      witness,
      size,
      at,
    );
    return !was?.c;
  }

  /** Event `seq` with its Merkle leaf: base64 of the entry encoding the chain hashes; null when there is none. */
  eventWithLeaf(seq: number): { event: AuditEvent; leaf: string } | null {
    const row = this.db.select().from(events).where(eq(events.seq, seq)).get();
    if (!row) return null;
    const leaf = encodeEntry(row);
    return { event: toEvent(row), leaf: Buffer.from(leaf, "utf8").toString("base64") };
  }

  /** RFC 9162 inclusion proof of event `seq` in the tree of `size`; null when either is out of range. */
  inclusionProof(seq: number, size: number): InclusionProof | null {
    if (!(size >= 1 && size <= this.head.seq && seq >= 1 && seq <= size)) return null;
    return { leaf_index: seq - 1, tree_size: size, hashes: inclusionProof(this.tree, seq - 1, size).map(base64) };
  }

  /** RFC 9162 consistency proof between tree sizes `from` and `to`; null when out of range. */
  consistencyProof(from: number, to: number): ConsistencyProof | null {
    if (!(from >= 1 && from <= to && to <= this.head.seq)) return null;
    return { from, to, hashes: consistencyProof(this.tree, from, to).map(base64) };
  }

  /**
   * Appends events in order; resolves with their sequence numbers and hashes. Appends that
   * arrive together (before the object's next macrotask) are written in one storage
   * transaction, so concurrent writers share a commit instead of paying one each.
   * Idempotent by outbox row: an event whose `outboxId` is already in the chain (a redelivery)
   * is not appended again, and resolves with the place it already has.
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
   * The whole group is hashed first and inserted after: hashing between inserts costs about
   * 10 µs more an entry than the two phases apart (measured in workerd).
   */
  private flush(): void {
    const group = this.pending;
    this.pending = [];
    const outcomes: ({ ok: true; written: Written[] } | { ok: false; error: unknown })[] = [];
    try {
      this.ctx.storage.transactionSync(() => {
        let plans = this.plan(
          group.map((p) => p.batch),
          this.head,
        );
        group.forEach((_, i) => {
          const plan = plans[i]!;
          try {
            if ("error" in plan) throw plan.error;
            this.ctx.storage.transactionSync(() => this.insert(plan.rows, plan.leaves));
            this.head = plan.head;
            outcomes.push({ ok: true, written: plan.written });
          } catch (error) {
            this.tree.forget();
            outcomes.push({ ok: false, error });
            // The appends after it were chained onto it: plan them again from the head as it stands.
            const rest = this.plan(
              group.slice(i + 1).map((p) => p.batch),
              this.head,
            );
            plans = [...plans.slice(0, i + 1), ...rest];
          }
        });
      });
    } catch (error) {
      this.tree.forget();
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

  /**
   * The rows of each append, chained after `head` in order (nothing is written): an event
   * whose outbox row is already in the chain, or earlier in the group, gets that place instead.
   * An append that cannot be hashed fails alone and the next one follows the one before it.
   */
  private plan(batches: AppendEvent[][], head: Written): Plan[] {
    const placed = this.placedOutboxRows(batches.flat());
    const salts = newSalts(batches.reduce((n, b) => n + b.length, 0));
    const now = nowIso();
    let at = head;
    return batches.map((batch) => {
      try {
        const mine = new Map<string, Written>();
        const rows: SqlStorageValue[][] = [];
        const leaves: Uint8Array[] = [];
        const written: Written[] = [];
        let { seq, hash } = at;
        for (const e of batch) {
          const already = e.outboxId ? (placed.get(e.outboxId) ?? mine.get(e.outboxId)) : undefined;
          if (already) {
            written.push(already);
            continue;
          }
          const next = newRow(e, seq + 1, hash, salts.pop()!, now);
          rows.push(next.row);
          leaves.push(next.leaf);
          seq += 1;
          hash = next.hash;
          written.push({ seq, hash });
          if (e.outboxId) mine.set(e.outboxId, { seq, hash });
        }
        for (const [id, w] of mine) placed.set(id, w);
        at = { seq, hash };
        return { rows, leaves, written, head: at };
      } catch (error) {
        return { error };
      }
    });
  }

  /** Inserts the rows and their leaves; the tree's nodes roll back with the rows. */
  private insert(rows: SqlStorageValue[][], leaves: Uint8Array[]): void {
    // Raw statement: building a Drizzle insert per row costs more than hashing the entry.
    rows.forEach((row, i) => {
      this.ctx.storage.sql.exec(INSERT_EVENT, ...row);
      appendLeaf(this.tree, (row[0] as number) - 1, leaves[i]!);
    });
    this.tree.write();
  }

  /** Where the batch's outbox rows already stand in the chain (none read when no event names one). */
  private placedOutboxRows(events: AppendEvent[]): Map<string, Written> {
    const ids = events.flatMap((e) => (e.outboxId ? [e.outboxId] : []));
    const placed = new Map<string, Written>();
    if (!ids.length) return placed;
    for (const [id, seq, hash] of this.ctx.storage.sql.exec(SELECT_DELIVERED, JSON.stringify(ids)).raw())
      placed.set(id as string, { seq: seq as number, hash: hash as string });
    return placed;
  }

  private readHead(): { seq: number; hash: string } {
    const last = this.db
      .select({ seq: events.seq, hash: events.hash })
      .from(events)
      .orderBy(desc(events.seq))
      .limit(1)
      .get();
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
   *
   * The window ends at the head as it is when verification starts. Rows are read and hashed
   * in chunks (two SHA-256 per entry: the part that costs), and the object yields between
   * chunks so appends are not held up behind a long verification.
   */
  async verify(limit: number): Promise<VerifyResult> {
    const toSeq = this.head.seq;
    const fromSeq = Math.max(1, toSeq - limit + 1);
    const anchor =
      fromSeq > 1
        ? this.db
            .select({ hash: events.hash })
            .from(events)
            .where(eq(events.seq, fromSeq - 1))
            .get()?.hash
        : GENESIS_HASH;
    let expectedPrev = anchor ?? null;
    let expectedSeq = fromSeq;
    let checked = 0;
    let first: number | null = null;
    for (let lo = fromSeq; lo <= toSeq; lo += VERIFY_CHUNK) {
      if (lo > fromSeq) await new Promise((resolve) => setTimeout(resolve, 0)); // let appends in between chunks
      // Rows are hashed as the cursor yields them: no array of the chunk, no hex built per digest.
      for (const raw of this.ctx.storage.sql
        .exec(SELECT_CHAIN_ROWS, lo, Math.min(toSeq, lo + VERIFY_CHUNK - 1))
        .raw()) {
        const r = chainRow(raw);
        first ??= r.seq;
        checked += 1;
        const breakType =
          r.seq !== expectedSeq || r.prevHash !== expectedPrev
            ? "linkage"
            : (r.salt !== null && !detailsMatch(r.salt, r.details, r.detailsDigest)) ||
                !equalsHex(utf8Sha256(encodeEntry(r)), r.hash)
              ? "content"
              : null;
        if (breakType)
          return { ok: false, checked, first_seq: first, last_seq: r.seq, failure_seq: r.seq, break_type: breakType };
        expectedPrev = r.hash;
        expectedSeq = r.seq + 1;
      }
    }
    const last = checked > 0 ? expectedSeq - 1 : null;
    return { ok: true, checked, first_seq: first, last_seq: last, failure_seq: null, break_type: null };
  }

  /**
   * Erasure: replaces the details of every event whose actor or subject is the user and drops
   * their salt. The digest, and so the chain, is kept: verify stays ok.
   */
  redactUser(userId: string): number {
    return this.ctx.storage.sql
      .exec(
        "UPDATE events SET details = ?1, salt = NULL WHERE (actor_id = ?2 OR subject_user_id = ?2) AND salt IS NOT NULL RETURNING seq",
        REDACTED_DETAILS,
        userId,
      )
      .toArray().length;
  }
}

/** Witness rounds are queued at most once a minute per workspace. */
export const WITNESS_ROUND_INTERVAL_MS = 60_000;

const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");

/** Rows of tree_nodes per INSERT: three bound parameters each, within the statement's limit of 100. */
const NODES_PER_INSERT = 33;

type TreeStore = NodeStore & {
  /** Writes the nodes put since the last call. */
  write(): void;
  /** Drops what is buffered or remembered: the transaction that wrote it rolled back. */
  forget(): void;
};

/**
 * The tree's nodes in SQL. The two newest nodes of each level are kept in memory: the node an
 * append pairs with is the one before the node it just put, so an append reads none. Puts are buffered and written
 * together by `write()` (one INSERT per append instead of one per node).
 */
function sqlNodeStore(sql: SqlStorage): TreeStore {
  type Node = { idx: number; hash: Uint8Array };
  let newest: ({ last: Node; before?: Node } | undefined)[] = [];
  let pending: (number | ArrayBuffer)[] = [];
  return {
    get: (level, idx) => {
      const kept = newest[level];
      if (kept?.last.idx === idx) return kept.last.hash;
      if (kept?.before?.idx === idx) return kept.before.hash;
      return new Uint8Array(
        sql.exec<{ hash: ArrayBuffer }>("SELECT hash FROM tree_nodes WHERE level = ? AND idx = ?", level, idx).one()
          .hash,
      );
    },
    put: (level, idx, hash) => {
      newest[level] = { last: { idx, hash }, before: newest[level]?.last };
      // A digest may be a view into a larger buffer: bind a copy of its own bytes.
      pending.push(level, idx, hash.slice().buffer);
    },
    write: () => {
      const params = pending;
      pending = [];
      for (let at = 0; at < params.length; at += 3 * NODES_PER_INSERT) {
        const chunk = params.slice(at, at + 3 * NODES_PER_INSERT);
        const values = Array.from({ length: chunk.length / 3 }, () => "(?, ?, ?)").join(", ");
        sql.exec(`INSERT INTO tree_nodes (level, idx, hash) VALUES ${values}`, ...chunk);
      }
    },
    forget: () => {
      newest = [];
      pending = [];
    },
  };
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

function toEvent(r: typeof events.$inferSelect): AuditEvent {
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
