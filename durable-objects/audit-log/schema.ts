import { blob, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/** One row per audit event of the object's workspace; `seq` is gap-free from 1. */
export const events = sqliteTable(
  "events",
  {
    seq: integer("seq").primaryKey(),
    id: text("id").notNull(),
    occurredAt: text("occurred_at").notNull(),
    kind: text("kind").notNull(),
    outcome: text("outcome").notNull(),
    actorKind: text("actor_kind").notNull(),
    actorId: text("actor_id"),
    agentId: text("agent_id"),
    conversationId: text("conversation_id"),
    target: text("target").notNull(),
    intent: text("intent").notNull(),
    /** Lookup key for erasure only; not part of the hash. */
    subjectUserId: text("subject_user_id"),
    /** Canonical JSON of the redacted-at-write details; replaced on erasure. */
    details: text("details").notNull(),
    /** Hex salt of the details digest; dropped on erasure so the old details cannot be confirmed by guessing. */
    salt: text("salt"),
    detailsDigest: text("details_digest").notNull(),
    prevHash: text("prev_hash").notNull(),
    hash: text("hash").notNull(),
    /** The D1 `audit_outbox` row it came from: an outbox row delivered twice lands once. Not hashed. */
    outboxId: text("outbox_id"),
  },
  (t) => [
    index("events_occurred_idx").on(t.occurredAt),
    index("events_kind_idx").on(t.kind),
    index("events_actor_idx").on(t.actorId),
    index("events_subject_idx").on(t.subjectUserId),
    uniqueIndex("events_outbox_idx").on(t.outboxId),
  ],
);

/**
 * The Merkle tree over the events (RFC 9162): the hash of every perfect subtree, the node at
 * `level` and `idx` covering leaves [idx·2^level, (idx+1)·2^level). Level 0 holds the leaf
 * hashes (leaf index = seq - 1). Any root or proof is O(log n) of these.
 */
export const treeNodes = sqliteTable(
  "tree_nodes",
  {
    level: integer("level").notNull(),
    idx: integer("idx").notNull(),
    hash: blob("hash").notNull(),
  },
  (t) => [primaryKey({ columns: [t.level, t.idx] })],
);

/**
 * Per witness (by its verifier key): the latest checkpoint it cosigned (the `old` size of the
 * next add-checkpoint) and its cosignature line, or the size it answered when it refused ours.
 */
export const witnesses = sqliteTable("witnesses", {
  witness: text("witness").primaryKey(),
  size: integer("size").notNull().default(0),
  root: text("root"),
  cosignature: text("cosignature"),
  /** Set while the witness refuses our checkpoints (409: it saw another history). */
  conflictSize: integer("conflict_size"),
  conflictAt: text("conflict_at"),
});

/** One row: when the workspace's last witness round was queued (rounds run at most once a minute). */
export const witnessRounds = sqliteTable("witness_rounds", {
  id: integer("id").primaryKey(),
  queuedAt: integer("queued_at").notNull(),
});
