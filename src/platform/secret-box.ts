import { base64ToBytes, base64url } from "./ids";
import { logWarning } from "./log";
import { ApiError } from "./problem";

/**
 * The one AES-GCM helper for stored third-party secrets (Slack bot tokens, MCP header values).
 *
 * Sealed form: `<key id>.<base64url(iv ‖ ciphertext+tag)>` with a random 96-bit IV per seal.
 * The key id is the first 8 hex digits of SHA-256(key), so a value names the key that sealed
 * it: to rotate, set the new key as `ENCRYPTION_KEY` and the old one as
 * `ENCRYPTION_KEY_PREVIOUS`; values sealed under either open, new ones use the new key.
 * `aad` binds a value to its owner (e.g. the workspace id): opened under another, it fails.
 */

const DEV_KEY_TEXT = "workspace-agent-service local development key (never use in production)";

export class EncryptionUnavailable extends ApiError {
  constructor(detail: string) {
    super(503, "encryption_not_configured", detail);
  }
}

type Key = { id: string; key: CryptoKey };

// Imported keys, per configured value: safe to lose.
const imported = new Map<string, Key>();
let warned = false;

async function importKey(raw: Uint8Array): Promise<Key> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", raw));
  const id = Array.from(digest.subarray(0, 4), (b) => b.toString(16).padStart(2, "0")).join("");
  const key = await crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]);
  return { id, key };
}

async function keyFrom(b64: string, name: string): Promise<Key> {
  const cached = imported.get(b64);
  if (cached) return cached;
  let raw: Uint8Array;
  try {
    raw = base64ToBytes(b64.trim());
  } catch {
    throw new EncryptionUnavailable(`${name} is not valid base64`);
  }
  if (raw.length !== 32) throw new EncryptionUnavailable(`${name} must be the base64 of exactly 32 bytes`);
  const key = await importKey(raw);
  imported.set(b64, key);
  return key;
}

/** True when the service runs locally: BASE_URL unset, or an http loopback origin. */
export function isLocal(env: Env): boolean {
  if (!env.BASE_URL) return true;
  try {
    const url = new URL(env.BASE_URL);
    return ["localhost", "127.0.0.1", "[::1]"].includes(url.hostname);
  } catch {
    return false;
  }
}

/**
 * The current key. Without `ENCRYPTION_KEY` a local deployment uses a development key
 * derived from a fixed text (with a warning); a public one refuses with 503
 * `encryption_not_configured`, so nothing is ever sealed under a key anyone could derive.
 */
async function currentKey(env: Env): Promise<Key> {
  if (env.ENCRYPTION_KEY) return keyFrom(env.ENCRYPTION_KEY, "ENCRYPTION_KEY");
  if (!isLocal(env))
    throw new EncryptionUnavailable("ENCRYPTION_KEY is not configured; stored credentials cannot be sealed");
  if (!warned) {
    warned = true;
    logWarning("ENCRYPTION_KEY unset: using the local development key (never in production)");
  }
  const cached = imported.get(DEV_KEY_TEXT);
  if (cached) return cached;
  const raw = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(DEV_KEY_TEXT)));
  const key = await importKey(raw);
  imported.set(DEV_KEY_TEXT, key);
  return key;
}

const aadOf = (aad?: string) => (aad === undefined ? {} : { additionalData: new TextEncoder().encode(aad) });

/** Encrypts `plaintext` under the current key. */
export async function seal(env: Env, plaintext: string, aad?: string): Promise<string> {
  const { id, key } = await currentKey(env);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const ct = new Uint8Array(
    await crypto.subtle.encrypt({ name: "AES-GCM", iv, ...aadOf(aad) }, key, new TextEncoder().encode(plaintext)),
  );
  const out = new Uint8Array(iv.length + ct.length);
  out.set(iv);
  out.set(ct, iv.length);
  return `${id}.${base64url(out)}`;
}

function fromBase64url(s: string): Uint8Array {
  const b64 = s.replaceAll("-", "+").replaceAll("_", "/");
  return base64ToBytes(b64 + "=".repeat((4 - (b64.length % 4)) % 4));
}

/**
 * Decrypts a value `seal` produced, with whichever configured key sealed it. A value whose
 * key is no longer configured, or that was altered, or opened with another `aad`, throws.
 */
export async function open(env: Env, sealed: string, aad?: string): Promise<string> {
  const dot = sealed.indexOf(".");
  if (dot < 0) throw new Error("not a sealed value");
  const keyId = sealed.slice(0, dot);
  const candidates = [await currentKey(env)];
  if (env.ENCRYPTION_KEY_PREVIOUS)
    candidates.push(await keyFrom(env.ENCRYPTION_KEY_PREVIOUS, "ENCRYPTION_KEY_PREVIOUS"));
  const match = candidates.find((k) => k.id === keyId);
  if (!match) throw new Error(`the key ${keyId} that sealed this value is not configured`);
  const bytes = fromBase64url(sealed.slice(dot + 1));
  if (bytes.length < 12 + 16) throw new Error("sealed value too short");
  const plain = await crypto.subtle.decrypt(
    { name: "AES-GCM", iv: bytes.subarray(0, 12), ...aadOf(aad) },
    match.key,
    bytes.subarray(12),
  );
  return new TextDecoder().decode(plain);
}

/** Whether sealing works in this deployment (a key is configured, or it runs locally). */
export async function sealingAvailable(env: Env): Promise<boolean> {
  try {
    await currentKey(env);
    return true;
  } catch (e) {
    if (e instanceof EncryptionUnavailable) return false;
    throw e;
  }
}
