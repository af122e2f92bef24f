/**
 * The audit log's Merkle tree (RFC 9162 §2.1, as RFC 6962), as functions over a store of the
 * perfect subtrees' hashes (documented in docs/audit-log.md):
 *
 *   leaf hash = SHA-256(0x00 ‖ leaf bytes)      node hash = SHA-256(0x01 ‖ left ‖ right)
 *
 * A node is (level, idx): the perfect subtree of 2^level leaves starting at leaf idx·2^level.
 * Appending leaf n stores it and every perfect subtree it completes; a root or a proof then
 * reads O(log n) nodes, since RFC 9162's split (the largest power of two below the size) always
 * puts a perfect, aligned subtree on the left.
 */
import { sha256 } from "./sha256";

export type NodeStore = {
  get(level: number, idx: number): Uint8Array;
  put(level: number, idx: number, hash: Uint8Array): void;
};

/** The prefixed bytes being hashed, filled and hashed synchronously (a leaf that does not fit gets its own). */
const scratch = new Uint8Array(4096);
const utf8 = new TextEncoder();

export function leafHash(leaf: Uint8Array | string): Uint8Array {
  scratch[0] = 0;
  if (typeof leaf === "string" && leaf.length * 3 < scratch.length)
    return sha256(scratch.subarray(0, 1 + utf8.encodeInto(leaf, scratch.subarray(1)).written));
  const bytes = typeof leaf === "string" ? utf8.encode(leaf) : leaf;
  const buffer = bytes.length < scratch.length ? scratch : new Uint8Array(bytes.length + 1);
  buffer[0] = 0;
  buffer.set(bytes, 1);
  return sha256(buffer.subarray(0, bytes.length + 1));
}

export function nodeHash(left: Uint8Array, right: Uint8Array): Uint8Array {
  scratch[0] = 1;
  scratch.set(left, 1);
  scratch.set(right, 1 + left.length);
  return sha256(scratch.subarray(0, 1 + left.length + right.length));
}

/** The root of the empty tree: SHA-256 of nothing. */
export const EMPTY_ROOT: Uint8Array = sha256(new Uint8Array(0));

/** Stores leaf `index` and every perfect subtree it completes. `index` must be the tree's size. */
export function appendLeaf(store: NodeStore, index: number, hash: Uint8Array): void {
  store.put(0, index, hash);
  let h = hash;
  for (let level = 0, idx = index; idx % 2 === 1; level++, idx = (idx - 1) / 2) {
    h = nodeHash(store.get(level, idx - 1), h);
    store.put(level + 1, (idx - 1) / 2, h);
  }
}

/** The largest power of two smaller than n (n > 1). */
function split(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/** MTH(D[lo:hi]) for lo aligned as RFC 9162's recursion leaves it; hi > lo. */
function subtree(store: NodeStore, lo: number, hi: number): Uint8Array {
  const n = hi - lo;
  if ((n & (n - 1)) === 0 && lo % n === 0) return store.get(Math.log2(n), lo / n);
  const k = split(n);
  return nodeHash(subtree(store, lo, lo + k), subtree(store, lo + k, hi));
}

export function rootHash(store: NodeStore, size: number): Uint8Array {
  return size === 0 ? EMPTY_ROOT : subtree(store, 0, size);
}

/** RFC 9162 §2.1.3.1 PATH(m, D[0:size]), 0 ≤ m < size: the audit path, leaf side first. */
export function inclusionProof(store: NodeStore, m: number, size: number): Uint8Array[] {
  const path: Uint8Array[] = [];
  let lo = 0;
  let hi = size;
  // Walked top-down; the hashes are collected from the root side and reversed at the end.
  while (hi - lo > 1) {
    const k = split(hi - lo);
    if (m < lo + k) {
      path.push(subtree(store, lo + k, hi));
      hi = lo + k;
    } else {
      path.push(subtree(store, lo, lo + k));
      lo += k;
    }
  }
  return path.reverse();
}

/** RFC 9162 §2.1.4.1 PROOF(m, D[0:size]), 0 < m ≤ size: empty when m = size. */
export function consistencyProof(store: NodeStore, m: number, size: number): Uint8Array[] {
  const proof: Uint8Array[] = [];
  let lo = 0;
  let hi = size;
  let whole = true;
  let left = m;
  while (left !== hi - lo) {
    const k = split(hi - lo);
    if (left <= k) {
      proof.push(subtree(store, lo + k, hi));
      hi = lo + k;
    } else {
      proof.push(subtree(store, lo, lo + k));
      lo += k;
      left -= k;
      whole = false;
    }
  }
  if (!whole) proof.push(subtree(store, lo, hi));
  return proof.reverse();
}
