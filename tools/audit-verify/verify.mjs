// Verifies a workspace's audit log as an outside auditor would, trusting nothing the service
// says about itself: the checkpoint's Ed25519 signature under the published log key, every
// event's leaf (it hashes to the event's `hash`, matches the event's fields and links to the
// event before it), every event's RFC 9162 inclusion proof and the whole tree's root, and the
// RFC 9162 consistency of an earlier (saved) checkpoint with this one.
//
// Pure: it takes a `fetch`, so it runs in Node (cli.mjs) and inside tests alike. SHA-256 is
// @noble/hashes; Ed25519 is the platform's WebCrypto.
import { sha256 } from "@noble/hashes/sha2.js";

const enc = new TextEncoder();

const hex = (/** @type {Uint8Array} */ b) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
const b64 = (/** @type {Uint8Array} */ b) => btoa(Array.from(b, (x) => String.fromCharCode(x)).join(""));
/** @param {string} s */
function unb64(s) {
  const bin = atob(s);
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}
const concat = (/** @type {Uint8Array[]} */ ...parts) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};
const equal = (/** @type {Uint8Array} */ a, /** @type {Uint8Array} */ b) =>
  a.length === b.length && a.every((x, i) => x === b[i]);

/** RFC 9162 §2.1.1: a leaf's hash and an interior node's. */
export const leafHash = (/** @type {Uint8Array} */ leaf) => sha256(concat(Uint8Array.of(0), leaf));
export const nodeHash = (/** @type {Uint8Array} */ l, /** @type {Uint8Array} */ r) =>
  sha256(concat(Uint8Array.of(1), l, r));

const half = (/** @type {number} */ n) => Math.floor(n / 2);
const odd = (/** @type {number} */ n) => n % 2 === 1;

/**
 * The root of the tree over these leaf hashes (RFC 9162 §2.1.1), built left to right.
 * @param {Uint8Array[]} leaves
 */
export function rootOf(leaves) {
  if (!leaves.length) return sha256(new Uint8Array());
  /** @type {{ hash: Uint8Array, size: number }[]} */
  const stack = [];
  for (const leaf of leaves) {
    let node = { hash: leaf, size: 1 };
    while (stack.length && stack[stack.length - 1].size === node.size) {
      const left = /** @type {{ hash: Uint8Array, size: number }} */ (stack.pop());
      node = { hash: nodeHash(left.hash, node.hash), size: left.size * 2 };
    }
    stack.push(node);
  }
  let root = /** @type {{ hash: Uint8Array }} */ (stack.pop()).hash;
  while (stack.length) root = nodeHash(/** @type {{ hash: Uint8Array }} */ (stack.pop()).hash, root);
  return root;
}

/**
 * RFC 9162 §2.1.3.2: does `path` prove the leaf at `index` in the tree of `size` with `root`?
 * @param {number} index @param {number} size @param {Uint8Array} leaf @param {Uint8Array[]} path @param {Uint8Array} root
 */
export function verifyInclusion(index, size, leaf, path, root) {
  if (index >= size) return false;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of path) {
    if (sn === 0) return false;
    if (odd(fn) || fn === sn) {
      r = nodeHash(p, r);
      while (!odd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else r = nodeHash(r, p);
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && equal(r, root);
}

/**
 * RFC 9162 §2.1.4.2: does `proof` show the tree of `first` leaves (`firstRoot`) is a prefix of
 * the tree of `second` leaves (`secondRoot`)?
 * @param {number} first @param {number} second @param {Uint8Array[]} proof @param {Uint8Array} firstRoot @param {Uint8Array} secondRoot
 */
export function verifyConsistency(first, second, proof, firstRoot, secondRoot) {
  if (first < 1 || first > second) return false;
  if (first === second) return proof.length === 0 && equal(firstRoot, secondRoot);
  const path = isPowerOfTwo(first) ? [firstRoot, ...proof] : proof;
  if (!path.length) return false;
  let fn = first - 1;
  let sn = second - 1;
  while (odd(fn)) {
    fn = half(fn);
    sn = half(sn);
  }
  let fr = path[0];
  let sr = path[0];
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (odd(fn) || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      while (!odd(fn) && fn !== 0) {
        fn = half(fn);
        sn = half(sn);
      }
    } else sr = nodeHash(sr, c);
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 && equal(fr, firstRoot) && equal(sr, secondRoot);
}

const isPowerOfTwo = (/** @type {number} */ n) => {
  while (n > 1 && !odd(n)) n = half(n);
  return n === 1;
};

/**
 * A signed-note verifier key `<name>+<8 hex key id>+<base64(0x01 ‖ Ed25519 public key)>`, its
 * id checked (first 4 bytes of SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key)).
 * @param {string} text
 */
export async function parseVerifierKey(text) {
  const [name, id, ...rest] = text.trim().split("+");
  let raw;
  try {
    raw = unb64(rest.join("+"));
  } catch {
    throw new Error("the log key is not base64");
  }
  if (!name || raw.length !== 33 || raw[0] !== 1)
    throw new Error("the log key is not an Ed25519 signed-note verifier key");
  const keyId = sha256(concat(enc.encode(name), Uint8Array.of(0x0a), raw)).subarray(0, 4);
  if (hex(keyId) !== id) throw new Error("the log key's id does not match its name and key");
  const key = await crypto.subtle.importKey("raw", raw.subarray(1), "Ed25519", false, ["verify"]);
  return { name, keyId, key };
}

/**
 * A checkpoint note signed by `vkey`: its origin, size and root, or an error message.
 * @param {string} note @param {{ name: string, keyId: Uint8Array, key: CryptoKey }} vkey
 * @returns {Promise<{ origin: string, size: number, root: Uint8Array, text: string } | { error: string }>}
 */
export async function openCheckpoint(note, vkey) {
  const split = note.lastIndexOf("\n\n");
  if (split < 0) return { error: "not a signed note (no blank line before the signatures)" };
  const text = note.slice(0, split + 1);
  const lines = text.slice(0, -1).split("\n");
  if (lines.length < 3) return { error: "not a checkpoint (origin, size and root hash lines)" };
  const [origin, sizeLine, rootLine] = /** @type {[string, string, string]} */ (lines);
  let signed = false;
  for (const line of note.slice(split + 2).split("\n")) {
    const m = /^— (\S+) (\S+)$/u.exec(line);
    if (!m || m[1] !== vkey.name) continue;
    let sig;
    try {
      sig = unb64(m[2]);
    } catch {
      continue;
    }
    if (sig.length !== 68 || !equal(sig.subarray(0, 4), vkey.keyId)) continue;
    if (await crypto.subtle.verify("Ed25519", vkey.key, sig.subarray(4), enc.encode(text))) signed = true;
  }
  if (!signed) return { error: `no valid signature by the log key ${vkey.name}` };
  if (!/^(0|[1-9][0-9]*)$/.test(sizeLine)) return { error: `the tree size "${sizeLine}" is not a number` };
  let root;
  try {
    root = unb64(rootLine);
  } catch {
    root = new Uint8Array();
  }
  if (root.length !== 32) return { error: "the root hash is not 32 bytes of base64" };
  return { origin, size: Number(sizeLine), root, text };
}

/** The fields of an event that its leaf encodes, in the leaf's order (after "v1"). */
const LEAF_FIELDS = [
  "prev_hash",
  "seq",
  "occurred_at",
  "kind",
  "outcome",
  "actor_kind",
  "actor_id",
  "agent_id",
  "conversation_id",
  "target",
  "intent",
  "details_digest",
];

/**
 * What is wrong with event `seq` and its leaf bytes, or null: the leaf hashes (SHA-256, hex) to
 * the event's `hash` and encodes its fields (the link to the event before is checked after).
 * @param {any} event @param {Uint8Array} leaf @param {number} seq
 */
function eventProblem(event, leaf, seq) {
  if (event.seq !== seq) return `the service answered event ${event.seq} for ${seq}`;
  if (hex(sha256(leaf)) !== event.hash) return "its leaf does not hash to its hash";
  let fields;
  try {
    fields = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(leaf));
  } catch {
    return "its leaf is not UTF-8 JSON";
  }
  if (!Array.isArray(fields) || fields[0] !== "v1" || fields.length !== LEAF_FIELDS.length + 1)
    return 'its leaf is not a ["v1", …] entry';
  const differs = LEAF_FIELDS.filter((f, i) => fields[i + 1] !== event[f]);
  if (differs.length) return `its fields differ from its leaf: ${differs.join(", ")}`;
  return null;
}

/**
 * Verifies the audit log of the workspace `token` belongs to.
 * `key` pins the log key (as published, e.g. in the README) instead of trusting the one served.
 * @param {{ url: string, token: string, key?: string, fetch?: typeof fetch, saved?: string | null, concurrency?: number, progress?: (message: string) => void }} opts
 * @returns {Promise<{ ok: boolean, errors: string[], checkpoint: string | null, origin: string | null, size: number }>}
 */
export async function verifyAuditLog(opts) {
  const doFetch = opts.fetch ?? fetch;
  const base = opts.url.replace(/\/+$/, "");
  const progress = opts.progress ?? (() => {});
  /** @type {string[]} */
  const errors = [];
  const result = (/** @type {string | null} */ checkpoint, /** @type {string | null} */ origin, size = 0) => ({
    ok: errors.length === 0,
    errors,
    checkpoint,
    origin,
    size,
  });
  /** @param {string} path @param {boolean} [auth] */
  const get = async (path, auth = true) => {
    const res = await doFetch(`${base}${path}`, { headers: auth ? { Authorization: `Bearer ${opts.token}` } : {} });
    const body = await res.text();
    if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${body.slice(0, 300)}`);
    return body;
  };
  /** @param {string} path */
  const getJson = async (path) => JSON.parse(await get(path));

  const served = (await get("/v1/audit/log-key", false)).trim();
  if (opts.key && opts.key.trim() !== served) {
    errors.push(`log key: the service publishes ${served}, not the key given (${opts.key.trim()})`);
    return result(null, null);
  }
  const vkey = await parseVerifierKey(opts.key ?? served);
  progress(`log key ${vkey.name}`);
  const note = await get("/v1/admin/audit/checkpoint");
  const cp = await openCheckpoint(note, vkey);
  if ("error" in cp) {
    errors.push(`checkpoint: ${cp.error}`);
    return result(note, null);
  }
  progress(`checkpoint ${cp.origin}: ${cp.size} events, root ${b64(cp.root)}`);

  // The saved checkpoint first: a log shorter than it, or another history, is the finding.
  if (opts.saved) {
    const old = await openCheckpoint(opts.saved, vkey);
    if ("error" in old) errors.push(`saved checkpoint: ${old.error}`);
    else if (old.origin !== cp.origin)
      errors.push(`saved checkpoint: it is of another log (${old.origin}, not ${cp.origin})`);
    else if (old.size > cp.size)
      errors.push(
        `saved checkpoint: the log has ${cp.size} events but a checkpoint saved earlier had ${old.size}: its tail was truncated (or rolled back)`,
      );
    else if (old.size === cp.size && !equal(old.root, cp.root))
      errors.push(`saved checkpoint: same size ${cp.size}, another root: the log forked (another history)`);
    else if (old.size > 0 && old.size < cp.size) {
      const proof = await getJson(`/v1/admin/audit/proofs/consistency?from=${old.size}&to=${cp.size}`);
      if (!verifyConsistency(old.size, cp.size, proof.hashes.map(unb64), old.root, cp.root))
        errors.push(
          `saved checkpoint: the log of ${cp.size} events does not extend the saved one of ${old.size} (the consistency proof fails): the log forked (another history)`,
        );
      else progress(`consistent with the saved checkpoint of ${old.size} events`);
    }
  }

  /** @type {Uint8Array[]} */
  const leaves = new Array(cp.size);
  /** @type {any[]} */
  const events = new Array(cp.size);
  const concurrency = opts.concurrency ?? 8;
  let next = 1;
  const worker = async () => {
    for (let seq = next++; seq <= cp.size; seq = next++) {
      try {
        const [event, proof] = await Promise.all([
          getJson(`/v1/admin/audit/events/${seq}`),
          getJson(`/v1/admin/audit/proofs/inclusion?seq=${seq}&size=${cp.size}`),
        ]);
        const leaf = unb64(event.leaf);
        events[seq - 1] = event;
        leaves[seq - 1] = leafHash(leaf);
        const problem = eventProblem(event, leaf, seq);
        if (problem) errors.push(`event ${seq}: ${problem}`);
        else if (!verifyInclusion(seq - 1, cp.size, leaves[seq - 1], proof.hashes.map(unb64), cp.root))
          errors.push(`event ${seq}: its inclusion proof does not lead to the checkpoint's root`);
      } catch (e) {
        errors.push(`event ${seq}: ${/** @type {Error} */ (e).message}`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, Math.max(cp.size, 1)) }, worker));
  if (events[0] && events[0].prev_hash !== "0".repeat(64)) errors.push("event 1: its prev_hash is not 64 zeros");
  for (let seq = 2; seq <= cp.size; seq++) {
    const [prev, event] = [events[seq - 2], events[seq - 1]];
    if (prev && event && event.prev_hash !== prev.hash)
      errors.push(`event ${seq}: its prev_hash is not event ${seq - 1}'s hash`);
  }
  if (leaves.every(Boolean) && !equal(rootOf(leaves), cp.root))
    errors.push("the events' leaves do not make the checkpoint's root");
  errors.sort(
    (a, b) => (Number(/^event (\d+)/.exec(a)?.[1] ?? 0) || 0) - (Number(/^event (\d+)/.exec(b)?.[1] ?? 0) || 0),
  );
  progress(`${cp.size} events checked`);
  return result(note, cp.origin, cp.size);
}
