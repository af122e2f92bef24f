/**
 * Synchronous SHA-256 for the audit chain and its Merkle tree, through the runtime's native
 * implementation (`node:crypto`).
 *
 * The chain hashes many short messages (an entry is about 350 bytes, a tree node 65), so what a
 * digest costs is the call, not the compression. In workerd every `hash()` or `createHash()`
 * builds a Node stream `Transform` around the native hash handle and converts through Buffer:
 * about twice the cost of the handle's own `update` and `digest` (measured in workerd: 6 against
 * 11-13 µs an entry on a loaded machine; `@noble/hashes` in JS took 17-21 µs, `crypto.subtle`
 * 18 µs). So a digest copies a fresh native handle and feeds it directly, when the runtime's
 * `Hash` object exposes one that answers the known SHA-256 vector; otherwise it is `hash()`.
 */
import { createHash, hash } from "node:crypto";

/** What workerd's native hash handle offers (the handle behind `node:crypto`'s `Hash`). */
type NativeHash = {
  copy(outputLength: number): NativeHash;
  update(data: Uint8Array): boolean;
  digest(): ArrayBuffer;
};

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

export function toHex(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i++) s += HEX[bytes[i]!];
  return s;
}

const ABC = new Uint8Array([0x61, 0x62, 0x63]);
/** SHA-256("abc"), FIPS 180-2 appendix B.1. */
const ABC_SHA256 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

/** A pristine native SHA-256 handle to copy per digest, or null when the runtime has none we can trust. */
function nativeHandle(): NativeHash | null {
  try {
    const wrapper = createHash("sha256") as unknown as Record<symbol, unknown>;
    for (const key of Object.getOwnPropertySymbols(wrapper)) {
      const candidate = wrapper[key] as Partial<NativeHash> | null;
      if (
        typeof candidate?.copy !== "function" ||
        typeof candidate.update !== "function" ||
        typeof candidate.digest !== "function"
      )
        continue;
      const handle = candidate as NativeHash;
      const probe = handle.copy(32);
      probe.update(ABC);
      if (toHex(new Uint8Array(probe.digest())) === ABC_SHA256) return handle;
    }
  } catch {
    // Fall back to hash() below.
  }
  return null;
}

const pristine = nativeHandle();

/** SHA-256 of `bytes` (read synchronously; the caller may reuse the buffer afterwards). */
export const sha256: (bytes: Uint8Array) => Uint8Array = pristine
  ? (bytes) => {
      const h = pristine.copy(32);
      h.update(bytes);
      return new Uint8Array(h.digest());
    }
  : (bytes) => new Uint8Array(hash("sha256", bytes, "buffer") as unknown as Uint8Array);

/** Whether digests go through the native handle directly (for tests). */
export const nativeFastPath = pristine !== null;

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
