/**
 * C2SP signed-note with Ed25519 keys, as golang.org/x/mod/sumdb/note writes and reads them.
 *
 *   key id       = SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key)[0:4]
 *   verifier key = <name>+<8 hex key id>+<base64(0x01 ‖ public key)>
 *   signer key   = PRIVATE+KEY+<name>+<8 hex key id>+<base64(0x01 ‖ 32-byte seed)>
 *   note         = <text ending in \n> \n — <name> <base64(key id ‖ signature over the text)>\n
 */
import { base64ToBytes, bytesToBase64 } from "../platform/ids";

const ED25519 = 0x01;
/** PKCS#8 wrapping of a raw Ed25519 seed (RFC 8410): WebCrypto imports private keys only so. */
const PKCS8_PREFIX = Uint8Array.from([
  0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
]);
const encoder = new TextEncoder();

export type NoteSigner = { name: string; keyId: Uint8Array; publicKey: Uint8Array; key: CryptoKey };

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");

async function keyIdOf(name: string, publicKey: Uint8Array): Promise<Uint8Array> {
  const input = new Uint8Array([...encoder.encode(name), 0x0a, ED25519, ...publicKey]);
  return new Uint8Array(await crypto.subtle.digest("SHA-256", input)).subarray(0, 4);
}

/** A key name: non-empty, no `+`, no white space (signed-note's rule). */
export const validKeyName = (name: string) => name.length > 0 && !/[+\s]/u.test(name);

/** The signer of `name` from a 32-byte Ed25519 seed. */
export async function signerFromSeed(name: string, seed: Uint8Array): Promise<NoteSigner> {
  if (!validKeyName(name)) throw new Error("a key name is non-empty, without '+' or white space");
  if (seed.length !== 32) throw new Error("an Ed25519 seed is 32 bytes");
  const key = await crypto.subtle.importKey("pkcs8", new Uint8Array([...PKCS8_PREFIX, ...seed]), "Ed25519", true, [
    "sign",
  ]);
  const jwk = (await crypto.subtle.exportKey("jwk", key)) as JsonWebKey;
  const publicKey = base64ToBytes(jwk.x!.replaceAll("-", "+").replaceAll("_", "/"));
  return { name, keyId: await keyIdOf(name, publicKey), publicKey, key };
}

/** Reads a `PRIVATE+KEY+…` signer key; throws on a malformed one or a key id that does not match. */
export async function parseSignerKey(text: string): Promise<NoteSigner> {
  const parts = text.trim().split("+");
  if (parts.length < 5 || parts[0] !== "PRIVATE" || parts[1] !== "KEY") throw new Error("not a PRIVATE+KEY signer key");
  // The base64 may itself hold '+'.
  const [name, id, ...rest] = parts.slice(2);
  const raw = base64ToBytes(rest.join("+"));
  if (raw[0] !== ED25519 || raw.length !== 33) throw new Error("not an Ed25519 signer key");
  const signer = await signerFromSeed(name!, raw.subarray(1));
  if (hex(signer.keyId) !== id) throw new Error("the signer key's id does not match its name and key");
  return signer;
}

export function verifierKey(s: NoteSigner): string {
  return `${s.name}+${hex(s.keyId)}+${bytesToBase64(new Uint8Array([ED25519, ...s.publicKey]))}`;
}

/** The signature line of `text` (which must end in a newline). */
export async function signatureLine(s: NoteSigner, text: string): Promise<string> {
  const signature = new Uint8Array(await crypto.subtle.sign("Ed25519", s.key, encoder.encode(text)));
  return `— ${s.name} ${bytesToBase64(new Uint8Array([...s.keyId, ...signature]))}\n`;
}

/** The signed note: the text, a blank line, its signature line. */
export async function signNote(s: NoteSigner, text: string): Promise<string> {
  if (!text.endsWith("\n")) throw new Error("a note's text ends with a newline");
  return `${text}\n${await signatureLine(s, text)}`;
}
