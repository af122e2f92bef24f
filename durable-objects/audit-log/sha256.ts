/**
 * Synchronous SHA-256 (FIPS 180-4) for the audit chain and its Merkle tree, in plain
 * JavaScript over state kept between calls. The chain hashes many short messages (an entry is
 * about 350 bytes, a tree node 65): per message, crossing into the runtime's native hash
 * (node:crypto's `hash()` builds a stream around it per call) cost 11-13 µs in workerd, and
 * `@noble/hashes` allocates per digest; this allocates nothing but the digest it returns, and
 * `sha256Words` not even that. Checked against node:crypto in test/audit-sha256.test.ts.
 */

// biome-ignore format: the 64 round constants, eight a line
const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/** The state of the digest being computed; `sha256Words` hands it out until the next call. */
const H = new Int32Array(8);
const W = new Int32Array(64);
/** The last one or two blocks: the message's tail, the 0x80, zeros and the bit length. */
const tail = new Uint8Array(128);

/** Runs the compression function over the 64-byte block of `b` at `at`. */
function compress(b: Uint8Array, at: number): void {
  for (let i = 0; i < 16; i++, at += 4) W[i] = (b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!;
  for (let i = 16; i < 64; i++) {
    const w15 = W[i - 15]!;
    const w2 = W[i - 2]!;
    const s0 = ((w15 >>> 7) | (w15 << 25)) ^ ((w15 >>> 18) | (w15 << 14)) ^ (w15 >>> 3);
    const s1 = ((w2 >>> 17) | (w2 << 15)) ^ ((w2 >>> 19) | (w2 << 13)) ^ (w2 >>> 10);
    W[i] = (W[i - 16]! + s0 + W[i - 7]! + s1) | 0;
  }
  let a = H[0]!;
  let bb = H[1]!;
  let c = H[2]!;
  let d = H[3]!;
  let e = H[4]!;
  let f = H[5]!;
  let g = H[6]!;
  let h = H[7]!;
  for (let i = 0; i < 64; i++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[i]! + W[i]!) | 0;
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (S0 + ((a & bb) ^ (a & c) ^ (bb & c))) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = bb;
    bb = a;
    a = (t1 + t2) | 0;
  }
  H[0] = (H[0]! + a) | 0;
  H[1] = (H[1]! + bb) | 0;
  H[2] = (H[2]! + c) | 0;
  H[3] = (H[3]! + d) | 0;
  H[4] = (H[4]! + e) | 0;
  H[5] = (H[5]! + f) | 0;
  H[6] = (H[6]! + g) | 0;
  H[7] = (H[7]! + h) | 0;
}

/**
 * SHA-256 of `bytes` as eight big-endian words: the module's state, valid until the next digest
 * (copy it to keep it). `bytes` is read synchronously; the caller may reuse it afterwards.
 */
export function sha256Words(bytes: Uint8Array): Int32Array {
  H[0] = 0x6a09e667;
  H[1] = 0xbb67ae85;
  H[2] = 0x3c6ef372;
  H[3] = 0xa54ff53a;
  H[4] = 0x510e527f;
  H[5] = 0x9b05688c;
  H[6] = 0x1f83d9ab;
  H[7] = 0x5be0cd19;
  const length = bytes.length;
  const full = length - (length % 64);
  for (let at = 0; at < full; at += 64) compress(bytes, at);
  const rest = length - full;
  tail.set(bytes.subarray(full), 0);
  tail[rest] = 0x80;
  const end = rest < 56 ? 64 : 128;
  tail.fill(0, rest + 1, end - 8);
  // The length in bits, big-endian in the last 8 bytes (a message here is far below 2^53 bits).
  const bits = length * 8;
  const high = Math.floor(bits / 0x1_0000_0000);
  tail[end - 8] = high >>> 24;
  tail[end - 7] = high >>> 16;
  tail[end - 6] = high >>> 8;
  tail[end - 5] = high;
  tail[end - 4] = bits >>> 24;
  tail[end - 3] = bits >>> 16;
  tail[end - 2] = bits >>> 8;
  tail[end - 1] = bits;
  compress(tail, 0);
  if (end === 128) compress(tail, 64);
  return H;
}

/** SHA-256 of `bytes` (read synchronously; the caller may reuse the buffer afterwards). */
export function sha256(bytes: Uint8Array): Uint8Array {
  const words = sha256Words(bytes);
  const out = new Uint8Array(32);
  for (let i = 0; i < 8; i++) {
    const w = words[i]!;
    out[4 * i] = w >>> 24;
    out[4 * i + 1] = w >>> 16;
    out[4 * i + 2] = w >>> 8;
    out[4 * i + 3] = w;
  }
  return out;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

export function toHex(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i++) s += HEX[bytes[i]!];
  return s;
}

/** The value of a lowercase hex digit, or -1. */
function hexDigit(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 97 && code <= 102) return code - 87;
  return -1;
}

/** Whether `hex` is exactly the lowercase hex of the eight words `sha256Words` returned. */
export function wordsEqualHex(words: Int32Array, hex: string): boolean {
  if (hex.length !== 64) return false;
  for (let i = 0; i < 8; i++) {
    let w = 0;
    for (let j = 0; j < 8; j++) {
      const d = hexDigit(hex.charCodeAt(8 * i + j));
      if (d < 0) return false;
      w = (w << 4) | d;
    }
    if (w !== words[i]) return false;
  }
  return true;
}
