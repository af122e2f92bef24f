import { createHash } from "node:crypto";

// An independent RFC 9162 implementation: MTH by the definition's recursion over the leaf list,
// and the verification algorithms of §2.1.3.2 and §2.1.4.2, written from the RFC text.
export const sha256 = (...parts: Uint8Array[]) => {
  const h = createHash("sha256");
  for (const p of parts) h.update(p);
  return new Uint8Array(h.digest());
};
const H_LEAF = new Uint8Array([0]);
const H_NODE = new Uint8Array([1]);
export const leafOf = (bytes: Uint8Array) => sha256(H_LEAF, bytes);
export const node = (l: Uint8Array, r: Uint8Array) => sha256(H_NODE, l, r);
export const b64 = (b: Uint8Array) => btoa(String.fromCharCode(...b));
export const unb64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
export const same = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);

export function mth(leaves: Uint8Array[]): Uint8Array {
  if (leaves.length === 0) return sha256();
  if (leaves.length === 1) return leafOf(leaves[0]!);
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  return node(mth(leaves.slice(0, k)), mth(leaves.slice(k)));
}

/** RFC 9162 §2.1.3.2. */
export function verifyInclusion(index: number, size: number, leaf: Uint8Array, proof: Uint8Array[], root: Uint8Array) {
  if (index >= size) return false;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = node(p, r);
      if (fn % 2 === 0)
        while (fn % 2 === 0 && fn !== 0) {
          fn >>= 1;
          sn >>= 1;
        }
    } else r = node(r, p);
    fn >>= 1;
    sn >>= 1;
  }
  return sn === 0 && same(r, root);
}

/** RFC 9162 §2.1.4.2. */
export function verifyConsistency(first: number, second: number, h1: Uint8Array, h2: Uint8Array, path: Uint8Array[]) {
  if (first === second) return path.length === 0 && same(h1, h2);
  const proof = (first & (first - 1)) === 0 ? [h1, ...path] : [...path];
  if (proof.length === 0) return false;
  let fn = first - 1;
  let sn = second - 1;
  while (fn % 2 === 1) {
    fn >>= 1;
    sn >>= 1;
  }
  let fr = proof[0]!;
  let sr = proof[0]!;
  for (const c of proof.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = node(c, fr);
      sr = node(c, sr);
      if (fn % 2 === 0)
        while (fn % 2 === 0 && fn !== 0) {
          fn >>= 1;
          sn >>= 1;
        }
    } else sr = node(sr, c);
    fn >>= 1;
    sn >>= 1;
  }
  return same(fr, h1) && same(sr, h2) && sn === 0;
}
