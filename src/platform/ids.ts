import { uuidv7 } from "uuidv7";

/** Time-ordered UUIDs, so "newest first" is also primary-key order. */
export const newId = (): string => uuidv7();

/** `prefix` followed by the base64url of `bytes` random bytes (32 bytes = 256 bits = 43 chars). */
export function randomToken(prefix: string, bytes = 32): string {
  const buf = crypto.getRandomValues(new Uint8Array(bytes));
  return prefix + base64url(buf);
}

export function base64url(bytes: Uint8Array): string {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

export function base64ToBytes(b64: string): Uint8Array {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

export function bytesToBase64(bytes: Uint8Array): string {
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin);
}
