/**
 * The audit hash chain, as pure functions (documented in docs/audit-log.md).
 *
 *   details_digest = hex SHA-256( salt_bytes ‖ UTF-8(canonical(details)) )
 *   hash           = hex SHA-256( UTF-8(JSON.stringify([
 *                      "v1", prev_hash, seq, occurred_at, kind, outcome, actor_kind, actor_id,
 *                      agent_id, conversation_id, target, intent, details_digest ])) )
 *
 * `canonical` is JSON with object keys sorted recursively and no insignificant white space;
 * absent ids are JSON null. The first entry's prev_hash is GENESIS_HASH (64 zeros).
 * Hashing is synchronous (see sha256.ts), so an append never
 * awaits between reading the head and writing the entry.
 */
import { Buffer } from "node:buffer";
import { sha256, sha256Words, toHex, wordsEqualHex } from "./sha256";

export const GENESIS_HASH = "0".repeat(64);
const VERSION = "v1";

export type ChainFields = {
  seq: number;
  occurredAt: string;
  kind: string;
  outcome: string;
  actorKind: string;
  actorId: string | null;
  agentId: string | null;
  conversationId: string | null;
  target: string;
  intent: string;
  detailsDigest: string;
  prevHash: string;
};

export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== "object") return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
}

const HEX_SALT = /^(?:[0-9a-f]{2})+$/;

/**
 * One buffer for the bytes being hashed, kept for the next call (filled and hashed
 * synchronously): no allocation per digest for the usual entry and details.
 */
const scratch = new Uint8Array(4096);
const utf8 = new TextEncoder();

/** The value of one lowercase hex digit (the salt has been checked to be lowercase hex). */
const nibble = (code: number) => (code > 57 ? code - 87 : code - 48);

/**
 * The salt's bytes then the details' UTF-8, in `scratch` when they fit (its length is returned)
 * or in a buffer of their own; null for a stored salt that is not lowercase hex.
 */
function saltedDetails(saltHex: string, canonicalDetails: string): Uint8Array | null {
  if (!HEX_SALT.test(saltHex)) return null;
  const saltLength = saltHex.length / 2;
  if (saltLength + canonicalDetails.length * 3 > scratch.length)
    return Buffer.concat([Buffer.from(saltHex, "hex"), Buffer.from(canonicalDetails, "utf8")]);
  for (let i = 0; i < saltLength; i++)
    scratch[i] = (nibble(saltHex.charCodeAt(2 * i)) << 4) | nibble(saltHex.charCodeAt(2 * i + 1));
  const { written } = utf8.encodeInto(canonicalDetails, scratch.subarray(saltLength));
  return scratch.subarray(0, saltLength + written);
}

/** A stored salt that is not lowercase hex matches no digest (verify reports a content break). */
export function detailsDigest(saltHex: string, canonicalDetails: string): string {
  const bytes = saltedDetails(saltHex, canonicalDetails);
  return bytes ? toHex(sha256(bytes)) : "";
}

/** Whether the details, salted, still hash to the stored `digest` (hex), without building the hex. */
export function detailsMatch(saltHex: string, canonicalDetails: string, digest: string): boolean {
  const bytes = saltedDetails(saltHex, canonicalDetails);
  return bytes !== null && wordsEqualHex(sha256Words(bytes), digest);
}

export function entryHash(f: ChainFields): string {
  return encodedEntryHash(encodeEntry(f));
}

/** SHA-256 of a string's UTF-8. */
function utf8Sha256(text: string): Uint8Array {
  if (text.length * 3 > scratch.length) return sha256(utf8.encode(text));
  const { written } = utf8.encodeInto(text, scratch);
  return sha256(scratch.subarray(0, written));
}

export function encodedEntryHash(encoded: string): string {
  return toHex(utf8Sha256(encoded));
}

/** Whether the encoded entry hashes to the stored `hash` (hex), without building the hex or a digest. */
export function entryMatches(encoded: string, hash: string): boolean {
  if (encoded.length * 3 > scratch.length) return wordsEqualHex(sha256Words(utf8.encode(encoded)), hash);
  const { written } = utf8.encodeInto(encoded, scratch);
  return wordsEqualHex(sha256Words(scratch.subarray(0, written)), hash);
}

/** The entry's canonical encoding: its UTF-8 is what the hash covers and the Merkle tree's leaf. */
export function encodeEntry(f: ChainFields): string {
  return JSON.stringify([
    VERSION,
    f.prevHash,
    f.seq,
    f.occurredAt,
    f.kind,
    f.outcome,
    f.actorKind,
    f.actorId,
    f.agentId,
    f.conversationId,
    f.target,
    f.intent,
    f.detailsDigest,
  ]);
}

const SALT_BYTES = 16;
/** The most `getRandomValues` fills in one call. */
const RANDOM_CHUNK = 65_536;

/** `n` fresh hex salts, drawn from as few calls to the random source as it allows. */
export function newSalts(n: number): string[] {
  const salts: string[] = [];
  for (let left = n; left > 0; left -= RANDOM_CHUNK / SALT_BYTES) {
    const count = Math.min(left, RANDOM_CHUNK / SALT_BYTES);
    const hex = Buffer.from(crypto.getRandomValues(new Uint8Array(count * SALT_BYTES))).toString("hex");
    for (let i = 0; i < count; i++) salts.push(hex.slice(i * SALT_BYTES * 2, (i + 1) * SALT_BYTES * 2));
  }
  return salts;
}
