import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { HttpResponse, http } from "msw";
import { setupServer } from "msw/node";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { AREAS } from "../src/app";
import { auditAlone } from "../src/audit/events";
import { auditArea } from "../src/audit-log";
import { WITNESS_QUEUE, type WitnessRoundMessage } from "../src/audit-log/witnessing";
import { registryOf } from "../src/http/area";
import { call, expectProblem } from "./support/api";
import { callWith } from "./support/app";
import { auditEvents } from "./support/audit";
import { signupWorkspace } from "./support/seed";

const enc = new TextEncoder();
const b64 = (b: Uint8Array) => btoa(String.fromCharCode(...b));
const unb64 = (s: string) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));

type Mode = "cosign" | "conflict" | "down" | "lose";

/**
 * A C2SP tlog-witness with a real Ed25519 key behind fetch: it keeps the size it last cosigned
 * per origin, answers 409 with that size when `old` is not it, and cosigns otherwise.
 */
async function fakeWitness(name: string, url: string) {
  const pair = (await crypto.subtle.generateKey("Ed25519", true, ["sign", "verify"])) as CryptoKeyPair;
  const pub = new Uint8Array((await crypto.subtle.exportKey("raw", pair.publicKey)) as ArrayBuffer);
  const raw = new Uint8Array([0x04, ...pub]);
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new Uint8Array([...enc.encode(name), 0x0a, ...raw])),
  );
  const keyId = digest.subarray(0, 4);
  const vkey = `${name}+${Array.from(keyId, (b) => b.toString(16).padStart(2, "0")).join("")}+${b64(raw)}`;
  const w = { vkey, url, mode: "cosign" as Mode, requests: [] as string[], sizes: new Map<string, number>() };
  const handler = http.post(`${url}/add-checkpoint`, async ({ request }) => {
    const body = await request.text();
    w.requests.push(body);
    if (w.mode === "down") return HttpResponse.error();
    const split = body.indexOf("\n\n");
    const old = Number(/^old (\d+)\n/.exec(body)![1]);
    const note = body.slice(split + 2);
    const text = note.slice(0, note.indexOf("\n\n") + 1);
    const [origin, size] = text.split("\n") as [string, string];
    const held = w.sizes.get(origin) ?? 0;
    const refuse = (s: number) =>
      new HttpResponse(`${s}\n`, { status: 409, headers: { "Content-Type": "text/x.tlog.size" } });
    if (w.mode === "conflict") return refuse(held + 1_000);
    if (old !== held) return refuse(held);
    w.sizes.set(origin, Number(size));
    if (w.mode === "lose") return HttpResponse.error(); // cosigned, but the answer never arrives
    const time = BigInt(Math.floor(Date.now() / 1000));
    const sig = new Uint8Array(
      await crypto.subtle.sign("Ed25519", pair.privateKey, enc.encode(`cosignature/v1\ntime ${time}\n${text}`)),
    );
    const stamp = new Uint8Array(8);
    new DataView(stamp.buffer).setBigUint64(0, time);
    return new HttpResponse(`— ${name} ${b64(new Uint8Array([...keyId, ...stamp, ...sig]))}\n`, { status: 200 });
  });
  /** True when `line` is this witness's valid cosignature of the checkpoint body `text`. */
  const verifies = async (line: string, text: string) => {
    const m = /^— (\S+) (\S+)$/u.exec(line);
    if (!m || m[1] !== name) return false;
    const sig = unb64(m[2]!);
    const time = new DataView(sig.buffer, 4, 8).getBigUint64(0);
    const key = await crypto.subtle.importKey("raw", pub, "Ed25519", false, ["verify"]);
    return crypto.subtle.verify("Ed25519", key, sig.subarray(12), enc.encode(`cosignature/v1\ntime ${time}\n${text}`));
  };
  return Object.assign(w, { handler, verifies });
}

const w1 = await fakeWitness("witness.test/w1", "https://witness.test/w1");
const w2 = await fakeWitness("witness.test/w2", "https://witness.test/w2");
const server = setupServer(w1.handler, w2.handler);

/** The Worker's env with witnesses configured and the witness queue captured. */
function withWitnesses(...ws: { vkey: string; url: string }[]) {
  const queued: WitnessRoundMessage[] = [];
  const overrides = {
    AUDIT_WITNESSES: ws.map((w) => `${w.vkey} ${w.url}`).join(",\n"),
    AUDIT_WITNESS: { send: async (m: WitnessRoundMessage) => void queued.push(m) },
  };
  const checkpoint = async (token: string) => {
    const res = await callWith(overrides, "GET", "/v1/admin/audit/checkpoint", { token });
    const note = await res.text();
    const text = note.slice(0, note.indexOf("\n\n") + 1);
    const lines = note
      .slice(text.length + 1)
      .split("\n")
      .filter(Boolean);
    return { res, note, text, size: Number(text.split("\n")[1]), lines, state: res.headers.get("Audit-Witness-State") };
  };
  /** Runs the queued rounds through the queue's consumer, as the Worker's queue handler does. */
  const runRounds = async () => {
    const batch = createMessageBatch<unknown>(
      WITNESS_QUEUE,
      queued.splice(0).map((body, i) => ({ id: `m${i}`, timestamp: new Date(), attempts: 1, body })),
    );
    const ctx = createExecutionContext();
    await auditArea.queues![WITNESS_QUEUE]!(batch, { ...env, ...overrides } as unknown as Env, registryOf(AREAS));
    return getQueueResult(batch, ctx);
  };
  return { queued, checkpoint, runRounds };
}

const addEvent = (workspaceId: string) =>
  auditAlone(env, { kind: "session.signout", workspaceId, actor: { kind: "system", id: null } });

beforeAll(() => server.listen({ onUnhandledRequest: "error" }));
afterEach(() => {
  vi.useRealTimers();
  w1.mode = "cosign";
  w2.mode = "cosign";
});
afterAll(() => server.close());

describe("witnesses (AUDIT_WITNESSES, C2SP tlog-witness)", () => {
  it("a witness cosigns the checkpoint: its cosignature line follows the signature, valid for exactly that checkpoint", async () => {
    const ws = await signupWorkspace();
    const wit = withWitnesses(w1, w2);
    const first = await wit.checkpoint(ws.adminToken);
    expect(first.res.status).toBe(200);
    expect(first.state).toBe("pending");
    expect(first.lines).toHaveLength(1); // the log's own signature only
    expect(wit.queued).toEqual([{ workspace_id: ws.workspace.id, request_origin: "https://svc.test" }]);

    const result = await wit.runRounds();
    expect(result.explicitAcks).toEqual(["m0"]);
    expect(w1.requests.at(-1)).toBe(`old 0\n\n${first.note}`);

    const cosigned = await wit.checkpoint(ws.adminToken);
    expect(cosigned.state).toBe("cosigned");
    expect(cosigned.text).toBe(first.text);
    // "then witnesses' cosignature lines"
    expect(cosigned.lines).toHaveLength(3);
    expect(cosigned.lines[0]).toBe(first.lines[0]);
    expect(await w1.verifies(cosigned.lines[1]!, cosigned.text)).toBe(true);
    expect(await w2.verifies(cosigned.lines[2]!, cosigned.text)).toBe(true);
    expect(wit.queued).toEqual([]); // every witness holds this checkpoint: no round

    // The tree grows: the old cosignatures are not for this checkpoint, and are not shown.
    await addEvent(ws.workspace.id);
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 61_000 });
    const grown = await wit.checkpoint(ws.adminToken);
    expect(grown.size).toBe(first.size + 1);
    expect(grown.state).toBe("pending");
    expect(grown.lines).toHaveLength(1);
    await wit.runRounds();
    // The next add-checkpoint starts at the size the witness cosigned, with the consistency proof from there.
    const proof = (await (
      await call("GET", `/v1/admin/audit/proofs/consistency?from=${first.size}&to=${grown.size}`, {
        token: ws.adminToken,
      })
    ).json()) as { hashes: string[] };
    expect(w1.requests.at(-1)).toBe(`old ${first.size}\n${proof.hashes.map((h) => `${h}\n`).join("")}\n${grown.note}`);
    const again = await wit.checkpoint(ws.adminToken);
    expect(again.state).toBe("cosigned");
    expect(await w1.verifies(again.lines[1]!, again.text)).toBe(true);
  });

  it("queues a witness round at most once a minute per workspace", async () => {
    const ws = await signupWorkspace();
    const wit = withWitnesses(w1);
    const t0 = Date.now();
    vi.useFakeTimers({ toFake: ["Date"], now: t0 });
    await wit.checkpoint(ws.adminToken);
    await addEvent(ws.workspace.id);
    vi.setSystemTime(t0 + 59_000);
    await wit.checkpoint(ws.adminToken);
    expect(wit.queued).toHaveLength(1);
    vi.setSystemTime(t0 + 60_000);
    await wit.checkpoint(ws.adminToken);
    expect(wit.queued).toHaveLength(2);
    expect(new Set(wit.queued.map((m) => m.workspace_id))).toEqual(new Set([ws.workspace.id]));
  });

  it("a witness answering 409 (it saw another history): an alert event, and the checkpoint route says witness_conflict without a 5xx", async () => {
    const ws = await signupWorkspace();
    const wit = withWitnesses(w1);
    w1.mode = "conflict";
    const refused = await wit.checkpoint(ws.adminToken);
    const result = await wit.runRounds();
    expect(result.explicitAcks).toEqual(["m0"]); // answered: nothing to retry
    const res = await wit.checkpoint(ws.adminToken);
    expect(res.res.status).toBe(200);
    expect(res.state).toBe("witness_conflict");
    expect(res.lines).toHaveLength(1); // the checkpoint itself is still served, signed
    const alerts = await auditEvents(ws.workspace.id, "audit.witness.conflict");
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({
      outcome: "error",
      actor_kind: "system",
      target: "witness:witness.test/w1",
      details: { witness: "witness.test/w1", witness_size: 1_000, size: refused.size },
    });
    // Another refusal in the same spell raises no second alert.
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 61_000 });
    await wit.checkpoint(ws.adminToken);
    await wit.runRounds();
    expect(await auditEvents(ws.workspace.id, "audit.witness.conflict")).toHaveLength(1);
  });

  it("a witness that is down is retried later; the checkpoint route answers meanwhile", async () => {
    const ws = await signupWorkspace();
    const wit = withWitnesses(w1);
    w1.mode = "down";
    await wit.checkpoint(ws.adminToken);
    const message = wit.queued[0]!;
    const result = await wit.runRounds();
    expect(result.retryMessages).toEqual([{ msgId: "m0" }]);
    const meanwhile = await wit.checkpoint(ws.adminToken);
    expect(meanwhile.res.status).toBe(200);
    expect(meanwhile.state).toBe("pending");
    // The retried message, once the witness is back.
    w1.mode = "cosign";
    wit.queued.push(message);
    expect((await wit.runRounds()).explicitAcks).toEqual(["m0"]);
    expect((await wit.checkpoint(ws.adminToken)).state).toBe("cosigned");
  });

  it("a witness whose cosignature we did not record (its answer was lost) gets a proof from the size it holds", async () => {
    const ws = await signupWorkspace();
    const wit = withWitnesses(w1);
    w1.mode = "lose";
    const first = await wit.checkpoint(ws.adminToken);
    const message = wit.queued[0]!;
    expect((await wit.runRounds()).retryMessages).toHaveLength(1);
    w1.mode = "cosign";
    wit.queued.push(message);
    expect((await wit.runRounds()).explicitAcks).toEqual(["m0"]);
    // old 0 → 409 "<size it holds>" → old <that size>, no alert
    expect(w1.requests.slice(-2).map((r) => r.split("\n")[0])).toEqual(["old 0", `old ${first.size}`]);
    expect((await wit.checkpoint(ws.adminToken)).state).toBe("cosigned");
    expect(await auditEvents(ws.workspace.id, "audit.witness.conflict")).toEqual([]);
  });

  it("an invalid AUDIT_WITNESSES is a clear 503 on the checkpoint route, not a 500", async () => {
    const ws = await signupWorkspace();
    for (const bad of ["not-a-key https://witness.test/w1", `${w1.vkey}`, `${w1.vkey} ftp://witness.test`]) {
      const res = await callWith({ AUDIT_WITNESSES: bad }, "GET", "/v1/admin/audit/checkpoint", {
        token: ws.adminToken,
      });
      const problem = await expectProblem(res, 503, "audit_witnesses_misconfigured");
      expect(problem.detail).toMatch(/^AUDIT_WITNESSES is invalid: /);
    }
  });
});
