/**
 * A witness's side of the C2SP tlog-witness `add-checkpoint` protocol, and the C2SP
 * tlog-cosignature (`cosignature/v1`) lines it answers with.
 *
 *   request  POST <witness URL>/add-checkpoint
 *            old <size the witness last saw>\n<base64 consistency proof line>…\n\n<signed checkpoint>
 *   answer   200: cosignature lines `— <name> base64(key id ‖ 8-byte big-endian time ‖ signature)`
 *            409 (text/x.tlog.size): the witness saw another size (or another history)
 *   signed   "cosignature/v1\ntime <time>\n" ‖ checkpoint body; key id over (name ‖ 0x0A ‖ 0x04 ‖ key)
 */
import { base64ToBytes } from "../platform/ids";

const COSIGNATURE_V1 = 0x04;
const encoder = new TextEncoder();

export type Witness = { name: string; keyId: Uint8Array; key: CryptoKey; url: string };
export type WitnessAnswer =
  | { state: "cosigned"; cosignature: string }
  | { state: "conflict"; size: number | null }
  | { state: "failed"; detail: string };

/** A witness from its URL and its `<name>+<key id>+<base64(0x04 ‖ Ed25519 key)>` verifier key. */
export async function parseWitness(url: string, verifierKey: string): Promise<Witness> {
  const [name, id, ...rest] = verifierKey.trim().split("+");
  const raw = base64ToBytes(rest.join("+"));
  if (!name || raw[0] !== COSIGNATURE_V1 || raw.length !== 33) throw new Error("not a cosignature/v1 verifier key");
  const publicKey = raw.subarray(1);
  const digest = await crypto.subtle.digest("SHA-256", new Uint8Array([...encoder.encode(name), 0x0a, ...raw]));
  const keyId = new Uint8Array(digest).subarray(0, 4);
  if (Array.from(keyId, (b) => b.toString(16).padStart(2, "0")).join("") !== id)
    throw new Error("the witness key's id does not match its name and key");
  const key = await crypto.subtle.importKey("raw", publicKey, "Ed25519", false, ["verify"]);
  return { name, keyId, key, url: url.replace(/\/+$/, "") };
}

export const addCheckpointBody = (oldSize: number, proof: string[], signedCheckpoint: string) =>
  `old ${oldSize}\n${proof.map((h) => `${h}\n`).join("")}\n${signedCheckpoint}`;

/** The first line of `answer` that is a valid cosignature by `w` of `checkpointBody`, or null. */
export async function validCosignature(w: Witness, checkpointBody: string, answer: string): Promise<string | null> {
  for (const line of answer.split("\n")) {
    const m = /^— (\S+) (\S+)$/u.exec(line);
    if (!m || m[1] !== w.name) continue;
    let sig: Uint8Array;
    try {
      sig = base64ToBytes(m[2]!);
    } catch {
      continue;
    }
    if (sig.length !== 76 || !sig.subarray(0, 4).every((b, i) => b === w.keyId[i])) continue;
    const time = new DataView(sig.buffer, sig.byteOffset + 4, 8).getBigUint64(0);
    const message = encoder.encode(`cosignature/v1\ntime ${time}\n${checkpointBody}`);
    if (await crypto.subtle.verify("Ed25519", w.key, sig.subarray(12), message)) return line;
  }
  return null;
}

/** Sends one checkpoint to one witness; never throws. */
export async function addCheckpoint(
  w: Witness,
  request: { oldSize: number; proof: string[]; signedCheckpoint: string; checkpointBody: string },
  fetcher: typeof fetch = fetch,
): Promise<WitnessAnswer> {
  try {
    const res = await fetcher(`${w.url}/add-checkpoint`, {
      method: "POST",
      body: addCheckpointBody(request.oldSize, request.proof, request.signedCheckpoint),
    });
    const text = await res.text();
    if (res.status === 409) {
      const size = Number(text.trim());
      return { state: "conflict", size: Number.isSafeInteger(size) ? size : null };
    }
    if (res.status !== 200) return { state: "failed", detail: `witness answered ${res.status}` };
    const cosignature = await validCosignature(w, request.checkpointBody, text);
    return cosignature ? { state: "cosigned", cosignature } : { state: "failed", detail: "no valid cosignature" };
  } catch (error) {
    return { state: "failed", detail: (error as Error).message };
  }
}
