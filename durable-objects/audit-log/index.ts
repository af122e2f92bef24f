import { DurableObject } from "cloudflare:workers";
import { Buffer } from "node:buffer";
import { eq } from "drizzle-orm";
import { type DrizzleSqliteDODatabase, drizzle } from "drizzle-orm/durable-sqlite";
import { migrate } from "drizzle-orm/durable-sqlite/migrator";
import { ChainWriter, type Written } from "./append";
import { canonicalJson, encodeEntry } from "./chain";
import { consistencyProof, inclusionProof, rootHash } from "./merkle";
import migrations from "./migrations/migrations.js";
import { listEvents, toEvent } from "./queries";
import * as schema from "./schema";
import { events } from "./schema";
import { catchUpTree, sqlNodeStore, type TreeStore } from "./tree-store";
import type {
  AppendEvent,
  AuditEvent,
  CheckpointHead,
  ConsistencyProof,
  InclusionProof,
  ListFilters,
  ListPage,
  ListResult,
  VerifyResult,
} from "./types";
import { verifyChain } from "./verify";
import { checkpointHead, recordConflict, recordCosignature } from "./witnesses";

export { WITNESS_ROUND_INTERVAL_MS } from "./witnesses";

const REDACTED_DETAILS = canonicalJson({ redacted: true });

const base64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");

/**
 * One per workspace: the single writer of that workspace's tamper-evident audit chain and its
 * RFC 9162 Merkle tree. This class is the object's RPC surface; the work is in the modules
 * beside it (append, verify, tree-store, witnesses, queries).
 */
export class AuditLog extends DurableObject<Env> {
  private readonly db: DrizzleSqliteDODatabase<typeof schema>;
  private readonly tree: TreeStore;
  private readonly writer: ChainWriter;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.db = drizzle(ctx.storage, { schema });
    this.tree = sqlNodeStore(ctx.storage.sql);
    this.writer = new ChainWriter(ctx.storage, this.tree);
    void ctx.blockConcurrencyWhile(async () => {
      await migrate(this.db, migrations);
      this.writer.load();
      catchUpTree(ctx.storage, this.tree, this.writer.head.seq);
    });
  }

  /** The tree's size (= the head's seq) and root hash, base64. */
  treeHead(): { size: number; root: string } {
    const size = this.writer.head.seq;
    return { size, root: base64(rootHash(this.tree, size)) };
  }

  /**
   * The tree head and what the given witnesses hold of it. With `now` (ms), `round_due` is true
   * (and the round is claimed) when a witness lacks this head and no round was queued in the last minute.
   */
  checkpointHead(witnessKeys: string[], now: number | null): CheckpointHead {
    return checkpointHead(this.ctx.storage.sql, this.treeHead(), witnessKeys, now);
  }

  /** A witness cosigned the checkpoint of `size` and `root`: its next add-checkpoint starts there. */
  recordCosignature(witness: string, size: number, root: string, cosignature: string): void {
    recordCosignature(this.ctx.storage.sql, witness, size, root, cosignature);
  }

  /** A witness refused our checkpoint (409); true when it was not refusing already (the alert is due). */
  recordConflict(witness: string, size: number | null, at: string): boolean {
    return recordConflict(this.ctx.storage.sql, witness, size, at);
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
    if (!(size >= 1 && size <= this.writer.head.seq && seq >= 1 && seq <= size)) return null;
    return { leaf_index: seq - 1, tree_size: size, hashes: inclusionProof(this.tree, seq - 1, size).map(base64) };
  }

  /** RFC 9162 consistency proof between tree sizes `from` and `to`; null when out of range. */
  consistencyProof(from: number, to: number): ConsistencyProof | null {
    if (!(from >= 1 && from <= to && to <= this.writer.head.seq)) return null;
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
    return this.writer.append(batch);
  }

  list(filters: ListFilters, page: ListPage): ListResult {
    return listEvents(this.db, filters, page);
  }

  /**
   * Recomputes the last `limit` entries (see verify.ts). The window ends at the head as it is
   * when verification starts.
   */
  verify(limit: number): Promise<VerifyResult> {
    return verifyChain(this.ctx.storage.sql, this.writer.head.seq, limit);
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
