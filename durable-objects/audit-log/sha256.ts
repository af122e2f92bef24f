/**
 * Synchronous SHA-256 for the audit chain and its Merkle tree, through the runtime's native
 * implementation (`node:crypto`'s one-shot `hash()`): the chain hashes many short messages (an
 * entry is about 350 bytes, a tree node 65), where a synchronous call beats `crypto.subtle`'s
 * promise per digest and `@noble/hashes` in JS (measured in workerd: 11-13 µs an entry against
 * 18 and 17-21 µs on a loaded machine).
 */
import { hash } from "node:crypto";

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

export function toHex(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i++) s += HEX[bytes[i]!];
  return s;
}

/** SHA-256 of `bytes` (read synchronously; the caller may reuse the buffer afterwards). */
export function sha256(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(hash("sha256", bytes, "buffer") as unknown as Uint8Array);
}

/** The value of a lowercase hex digit, or -1. */
function hexDigit(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 97 && code <= 102) return code - 87;
  return -1;
}

/** Whether `hex` is exactly the lowercase hex of `bytes`, without building either string. */
export function equalsHex(bytes: Uint8Array, hex: string): boolean {
  if (hex.length !== bytes.length * 2) return false;
  for (let i = 0; i < bytes.length; i++)
    if (((hexDigit(hex.charCodeAt(2 * i)) << 4) | hexDigit(hex.charCodeAt(2 * i + 1))) !== bytes[i]) return false;
  return true;
}
