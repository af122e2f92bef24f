import { encodeEntry } from "./chain";
import { CHAIN_CHUNK, chainRow, SELECT_CHAIN_ROWS } from "./chain-rows";
import { appendLeaf, leafHash, type NodeStore } from "./merkle";

/** Rows of tree_nodes per INSERT: three bound parameters each, within the statement's limit of 100. */
const NODES_PER_INSERT = 33;

/** Where the store stood before an append: `rollback` returns it there. */
export type TreeMark = { newest: unknown[]; pending: number };

export type TreeStore = NodeStore & {
  /** Writes the nodes put since the last call. */
  write(): void;
  mark(): TreeMark;
  /** Drops the nodes put since `mark` was taken: the append that put them rolled back. */
  rollback(mark: TreeMark): void;
  /** Drops what is buffered or remembered: the transaction that wrote it rolled back. */
  forget(): void;
};

/**
 * The tree's nodes in SQL. The two newest nodes of each level are kept in memory: the node an
 * append pairs with is the one before the node it just put, so an append reads none. Puts are buffered and written
 * together by `write()` (one INSERT per 33 nodes, for all the appends of a transaction, instead of one per node).
 */
export function sqlNodeStore(sql: SqlStorage): TreeStore {
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
    // `put` replaces a level's entry and never changes one, so a shallow copy is a snapshot.
    mark: () => ({ newest: [...newest], pending: pending.length }),
    rollback: (mark) => {
      newest = mark.newest as typeof newest;
      pending.length = mark.pending;
    },
    forget: () => {
      newest = [];
      pending = [];
    },
  };
}

/**
 * Adds the leaves of entries the tree lacks: a chain written before the tree existed gets
 * its tree when its object first wakes. Afterwards every append adds its leaves itself.
 */
export function catchUpTree(storage: DurableObjectStorage, tree: TreeStore, headSeq: number): void {
  const size = storage.sql
    // max over the primary key, not count(*): one index lookup on every wake, not a scan.
    .exec<{ n: number }>("SELECT coalesce(max(idx) + 1, 0) AS n FROM tree_nodes WHERE level = 0")
    .one().n;
  for (let lo = size + 1; lo <= headSeq; lo += CHAIN_CHUNK) {
    const rows = [...storage.sql.exec(SELECT_CHAIN_ROWS, lo, Math.min(headSeq, lo + CHAIN_CHUNK - 1)).raw()].map(
      chainRow,
    );
    storage.transactionSync(() => {
      for (const r of rows) appendLeaf(tree, r.seq - 1, leafHash(encodeEntry(r)));
      tree.write();
    });
  }
}
