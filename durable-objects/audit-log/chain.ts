/**
 * The audit hash chain, as pure functions (documented in README "Audit log").
 *
 *   details_digest = hex SHA-256( salt_bytes ‖ UTF-8(canonical(details)) )
 *   hash           = hex SHA-256( UTF-8(JSON.stringify([
 *                      "v1", prev_hash, seq, occurred_at, kind, outcome, actor_kind, actor_id,
 *                      agent_id, conversation_id, target, intent, details_digest ])) )
 *
 * `canonical` is JSON with object keys sorted recursively and no insignificant white space;
 * absent ids are JSON null. The first entry's prev_hash is GENESIS_HASH (64 zeros).
 * Hashing is synchronous (@noble/hashes) so an append never awaits between reading the
 * head and writing the entry. Verification writes nothing and may await: it uses the
 * WebCrypto variants below (same bytes in, same digests out), about twice as fast in workerd.
 */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, concatBytes, hexToBytes, utf8ToBytes } from "@noble/hashes/utils.js";

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

export function detailsDigest(saltHex: string, canonicalDetails: string): string {
  return bytesToHex(sha256(concatBytes(hexToBytes(saltHex), utf8ToBytes(canonicalDetails))));
}

export function entryHash(f: ChainFields): string {
  return bytesToHex(sha256(utf8ToBytes(encodeEntry(f))));
}

function encodeEntry(f: ChainFields): string {
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

async function sha256HexAsync(bytes: Uint8Array): Promise<string> {
  return bytesToHex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)));
}

const HEX_SALT = /^(?:[0-9a-f]{2})+$/;

/** As `detailsDigest`; a stored salt that is not lowercase hex matches no digest (a content break). */
export const detailsDigestAsync = (saltHex: string, canonicalDetails: string): Promise<string> =>
  HEX_SALT.test(saltHex) ? sha256HexAsync(concatBytes(hexToBytes(saltHex), utf8ToBytes(canonicalDetails))) : Promise.resolve("");

export const entryHashAsync = (f: ChainFields): Promise<string> => sha256HexAsync(utf8ToBytes(encodeEntry(f)));

export const newSalt = (): string => bytesToHex(crypto.getRandomValues(new Uint8Array(16)));
