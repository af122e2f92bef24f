import { uuidv7 } from "uuidv7";
import { nowIso } from "../../src/platform/env";
import {
  type ChainFields,
  canonicalJson,
  detailsDigest,
  encodedEntryHash,
  encodeEntry,
  GENESIS_HASH,
  newSalts,
} from "./chain";
import { appendLeaf, leafHash } from "./merkle";
import type { TreeStore } from "./tree-store";
import type { AppendEvent } from "./types";

const INSERT_EVENT = `INSERT INTO events (seq, id, occurred_at, kind, outcome, actor_kind, actor_id, agent_id,
  conversation_id, target, intent, subject_user_id, details, salt, details_digest, prev_hash, hash, outbox_id)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
const SELECT_DELIVERED = "SELECT outbox_id, seq, hash FROM events WHERE outbox_id IN (SELECT value FROM json_each(?))";

export type Written = { seq: number; hash: string };
/**
 * What an append will write (its rows, in INSERT_EVENT's order, and their Merkle leaf hashes),
 * where it lands, and the head after it.
 */
type Plan = { rows: SqlStorageValue[][]; leaves: Uint8Array[]; written: Written[]; head: Written } | { error: unknown };

type PendingAppend = { batch: AppendEvent[]; resolve: (written: Written[]) => void; reject: (error: unknown) => void };

/** The chain's last entry, or the genesis head of an empty chain. */
function readHead(sql: SqlStorage): Written {
  const [last] = sql.exec<Written>("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").toArray();
  return last ? { seq: last.seq, hash: last.hash } : { seq: 0, hash: GENESIS_HASH };
}

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

/**
 * The single writer of the chain and its tree. Appends are synchronous from reading the head
 * to writing the row (inside one storage transaction), so concurrent appends cannot fork it;
 * appends that arrive together share that transaction.
 */
export class ChainWriter {
  /** The chain's last entry, kept in memory: an append reads no head. */
  head: Written = { seq: 0, hash: GENESIS_HASH };
  /** Appends received since the last flush, written together by the next one. */
  private pending: PendingAppend[] = [];

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly tree: TreeStore,
  ) {}

  /** Reads the head from storage (once the object's tables exist). */
  load(): void {
    this.head = readHead(this.storage.sql);
  }

  /** See AuditLog.append. */
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
      this.storage.transactionSync(() => {
        let plans = this.plan(
          group.map((p) => p.batch),
          this.head,
        );
        group.forEach((_, i) => {
          const plan = plans[i]!;
          const mark = this.tree.mark();
          try {
            if ("error" in plan) throw plan.error;
            this.storage.transactionSync(() => this.insert(plan.rows, plan.leaves));
            this.head = plan.head;
            outcomes.push({ ok: true, written: plan.written });
          } catch (error) {
            this.tree.rollback(mark);
            outcomes.push({ ok: false, error });
            // The appends after it were chained onto it: plan them again from the head as it stands.
            const rest = this.plan(
              group.slice(i + 1).map((p) => p.batch),
              this.head,
            );
            plans = [...plans.slice(0, i + 1), ...rest];
          }
        });
        // The group's tree nodes, in as few INSERTs as they fit: they commit or roll back with its rows.
        this.tree.write();
      });
    } catch (error) {
      this.tree.forget();
      this.head = readHead(this.storage.sql);
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

  /** Inserts the rows and puts their leaves in the tree (written by `flush` for the whole group). */
  private insert(rows: SqlStorageValue[][], leaves: Uint8Array[]): void {
    // Raw statement: building a Drizzle insert per row costs more than hashing the entry.
    rows.forEach((row, i) => {
      this.storage.sql.exec(INSERT_EVENT, ...row);
      appendLeaf(this.tree, (row[0] as number) - 1, leaves[i]!);
    });
  }

  /** Where the batch's outbox rows already stand in the chain (none read when no event names one). */
  private placedOutboxRows(events: AppendEvent[]): Map<string, Written> {
    const ids = events.flatMap((e) => (e.outboxId ? [e.outboxId] : []));
    const placed = new Map<string, Written>();
    if (!ids.length) return placed;
    for (const [id, seq, hash] of this.storage.sql.exec(SELECT_DELIVERED, JSON.stringify(ids)).raw())
      placed.set(id as string, { seq: seq as number, hash: hash as string });
    return placed;
  }
}
