import { describe, expect, it } from "vitest";
import { checkpointBody, signedCheckpoint } from "../src/audit-log/checkpoint";
import { parseSignerKey } from "../src/audit-log/signed-note";
import { addCheckpoint, parseWitness } from "../src/audit-log/witness";
import vectors from "./fixtures/signed-note/vectors.json";

const b64 = (b: Uint8Array) => btoa(String.fromCharCode(...b));
const enc = new TextEncoder();

/** A witness with a real Ed25519 key, answering add-checkpoint as C2SP tlog-witness says. */
async function fakeWitness(name: string) {
  const pair = (await crypto.subtle.generateKey("Ed25519", true, ["sign", "verify"])) as CryptoKeyPair;
  const pub = new Uint8Array((await crypto.subtle.exportKey("raw", pair.publicKey)) as ArrayBuffer);
  const raw = new Uint8Array([0x04, ...pub]);
  const id = new Uint8Array(await crypto.subtle.digest("SHA-256", new Uint8Array([...enc.encode(name), 0x0a, ...raw])));
  const keyId = id.subarray(0, 4);
  const vkey = `${name}+${Array.from(keyId, (b) => b.toString(16).padStart(2, "0")).join("")}+${b64(raw)}`;
  const requests: string[] = [];
  const cosign: typeof fetch = async (_url, init) => {
    const body = String(init?.body);
    requests.push(body);
    const note = body.slice(body.indexOf("\n\n") + 2);
    const text = note.slice(0, note.indexOf("\n\n") + 1);
    const time = 1_700_000_000n;
    const message = enc.encode(`cosignature/v1\ntime ${time}\n${text}`);
    const sig = new Uint8Array(await crypto.subtle.sign("Ed25519", pair.privateKey, message));
    const stamp = new Uint8Array(8);
    new DataView(stamp.buffer).setBigUint64(0, time);
    return new Response(`— ${name} ${b64(new Uint8Array([...keyId, ...stamp, ...sig]))}\n`, { status: 200 });
  };
  return { vkey, requests, cosign };
}

describe("witnesses (C2SP tlog-witness add-checkpoint)", () => {
  it("sends the old size, the consistency proof and the signed checkpoint, and keeps a valid cosignature", async () => {
    const signer = await parseSignerKey(vectors.go_sumdb_note_example.signer_key);
    const origin = "svc.test/audit/ws";
    const root = b64(new Uint8Array(32).fill(7));
    const note = await signedCheckpoint(signer, origin, 5, root);
    const fake = await fakeWitness("witness.example/w1");
    const w = await parseWitness("https://witness.example/w1/", fake.vkey);
    const proof = [b64(new Uint8Array(32).fill(1)), b64(new Uint8Array(32).fill(2))];
    const answer = await addCheckpoint(
      w,
      { oldSize: 3, proof, signedCheckpoint: note, checkpointBody: checkpointBody(origin, 5, root) },
      fake.cosign,
    );
    expect(answer.state).toBe("cosigned");
    expect(fake.requests[0]).toBe(`old 3\n${proof[0]}\n${proof[1]}\n\n${note}`);
  });

  it("reports a witness that answers 409 (it saw another history) as a conflict, and a forged cosignature as a failure", async () => {
    const signer = await parseSignerKey(vectors.go_sumdb_note_example.signer_key);
    const note = await signedCheckpoint(signer, "o", 2, "AA==");
    const fake = await fakeWitness("witness.example/w2");
    const w = await parseWitness("https://witness.example/w2", fake.vkey);
    const request = { oldSize: 0, proof: [], signedCheckpoint: note, checkpointBody: checkpointBody("o", 2, "AA==") };
    const refusing: typeof fetch = async () =>
      new Response("7\n", { status: 409, headers: { "Content-Type": "text/x.tlog.size" } });
    expect(await addCheckpoint(w, request, refusing)).toEqual({ state: "conflict", size: 7 });
    const other = await fakeWitness("witness.example/w2");
    expect((await addCheckpoint(w, request, other.cosign)).state).toBe("failed");
  });
});
