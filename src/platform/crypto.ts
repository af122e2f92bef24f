import { hash } from "node:crypto";
import { hmac } from "@noble/hashes/hmac.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { utf8ToBytes } from "@noble/hashes/utils.js";
import { base64ToBytes, bytesToBase64 } from "./ids";

/** SHA-256 hex of a token: the only form in which tokens, codes and secrets are stored. */
export const hashToken = (token: string): string => hash("sha256", token, "hex");

/** HMAC-SHA256 of `message` under `key` (both UTF-8 text): the one MAC of the service. */
export const hmacSha256 = (key: string, message: string): Uint8Array =>
  hmac(sha256, utf8ToBytes(key), utf8ToBytes(message));

/** Constant-time comparison of two strings (length leaks, content does not). */
export function timingSafeEqual(a: string, b: string): boolean {
  const ab = utf8ToBytes(a);
  const bb = utf8ToBytes(b);
  let diff = ab.length ^ bb.length;
  for (let i = 0; i < Math.max(ab.length, bb.length); i++) diff |= (ab[i] ?? 0) ^ (bb[i] ?? 0);
  return diff === 0;
}

// 100 000 is the Workers runtime's PBKDF2 cap: never raise it.
const PBKDF2_ITERATIONS = 100_000;
const PASSWORD_SCHEME = "pbkdf2-sha256";

async function pbkdf2(password: string, salt: Uint8Array, iterations: number): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey("raw", utf8ToBytes(password), "PBKDF2", false, ["deriveBits"]);
  const bits = await crypto.subtle.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt, iterations }, key, 256);
  return new Uint8Array(bits);
}

/** `pbkdf2-sha256$<iterations>$<salt b64>$<hash b64>` with a fresh 16-byte salt. */
export async function hashPassword(password: string): Promise<string> {
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const hash = await pbkdf2(password, salt, PBKDF2_ITERATIONS);
  return [PASSWORD_SCHEME, PBKDF2_ITERATIONS, bytesToBase64(salt), bytesToBase64(hash)].join("$");
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, iterations, salt, hash] = stored.split("$");
  if (scheme !== PASSWORD_SCHEME || !iterations || !salt || !hash) return false;
  const candidate = await pbkdf2(password, base64ToBytes(salt), Number(iterations));
  return timingSafeEqual(bytesToBase64(candidate), hash);
}

/** A hash that no password matches, so unknown emails cost the same PBKDF2 as known ones. */
export const DUMMY_PASSWORD_HASH = `${PASSWORD_SCHEME}$${PBKDF2_ITERATIONS}$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=`;
