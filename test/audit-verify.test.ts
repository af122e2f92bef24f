/**
 * tools/audit-verify: the verifier an outside auditor runs, here against the Worker itself
 * (the module takes a fetch). "a tampered event, a truncated tail and a forked history are
 * each caught by tools/audit-verify".
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { AuditLog } from "../durable-objects/audit-log";
import { auditLog } from "../durable-objects/audit-log/client";
import { auditAlone } from "../src/audit/events";
import { auditSigner, signedCheckpoint } from "../src/audit-log/checkpoint";
import { verifyAuditLog, verifyConsistency, verifyInclusion } from "../tools/audit-verify/verify.mjs";
import vectors from "./fixtures/signed-note/vectors.json";
import { freshIp, ORIGIN } from "./support/api";
import { outboxSettled } from "./support/audit";
import { b64, leafOf, mth, sha256 } from "./support/rfc9162";
import { signupWorkspace } from "./support/seed";

const serviceFetch: typeof fetch = async (input, init) => {
  const request = new Request(input, init);
  request.headers.set("CF-Connecting-IP", freshIp());
  return exports.default.fetch(request);
};

const verify = (token: string, saved: string | null = null, fetcher = serviceFetch) =>
  verifyAuditLog({ url: ORIGIN, token, saved, fetch: fetcher });

async function workspaceWithEvents(n: number) {
  const ws = await signupWorkspace();
  await workspaceWithEventsIn(ws.workspace.id, n);
  return ws;
}

async function workspaceWithEventsIn(workspaceId: string, n: number) {
  for (let i = 0; i < n; i++)
    await auditAlone(env, { kind: "session.signout", workspaceId, actor: { kind: "system", id: null } });
}

/** RFC 9162 §2.1.3.1 PATH and §2.1.4.1 SUBPROOF, written from the RFC to check the tool's verifiers. */
const split = (n: number) => {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
};
function path(m: number, d: Uint8Array[]): Uint8Array[] {
  if (d.length <= 1) return [];
  const k = split(d.length);
  return m < k ? [...path(m, d.slice(0, k)), mth(d.slice(k))] : [...path(m - k, d.slice(k)), mth(d.slice(0, k))];
}
function subproof(m: number, d: Uint8Array[], b: boolean): Uint8Array[] {
  if (m === d.length) return b ? [] : [mth(d)];
  const k = split(d.length);
  return m <= k
    ? [...subproof(m, d.slice(0, k), b), mth(d.slice(k))]
    : [...subproof(m - k, d.slice(k), false), mth(d.slice(0, k))];
}

describe("tools/audit-verify", () => {
  it("its RFC 9162 verifiers accept every inclusion and consistency proof up to 33 leaves, and refuse a wrong one", () => {
    const data = Array.from({ length: 33 }, (_, i) => sha256(new Uint8Array([i])));
    for (let n = 1; n <= data.length; n++) {
      const d = data.slice(0, n);
      const root = mth(d);
      for (let m = 0; m < n; m++) {
        expect(verifyInclusion(m, n, leafOf(d[m]!), path(m, d), root)).toBe(true);
        expect(verifyInclusion(m, n, leafOf(d[(m + 1) % n]!), path(m, d), root)).toBe(n === 1);
      }
      for (let m = 1; m <= n; m++) {
        const old = mth(d.slice(0, m));
        expect(verifyConsistency(m, n, subproof(m, d, true), old, root)).toBe(true);
        if (m < n) expect(verifyConsistency(m, n, subproof(m, d, true), mth(data.slice(1, m + 1)), root)).toBe(false);
      }
    }
  });

  it("a clean log verifies: signature, every event and its inclusion, and consistency with a checkpoint saved earlier", async () => {
    const ws = await workspaceWithEvents(6);
    const first = await verify(ws.adminToken);
    expect(first.errors).toEqual([]);
    expect(first.ok).toBe(true);
    expect(first.origin).toBe(`svc.test/audit/${ws.workspace.id}`);
    expect(first.size).toBeGreaterThanOrEqual(7);
    await workspaceWithEventsIn(ws.workspace.id, 5);
    const later = await verify(ws.adminToken, first.checkpoint);
    expect(later.errors).toEqual([]);
    expect(later.size).toBe(first.size + 5);
    // the same checkpoint saved is consistent with itself
    expect((await verify(ws.adminToken, later.checkpoint)).ok).toBe(true);
  });

  it("catches a tampered event", async () => {
    const ws = await workspaceWithEvents(4);
    await outboxSettled(ws.workspace.id);
    await runInDurableObject(auditLog(env, ws.workspace.id), (_o: AuditLog, state) => {
      state.storage.sql.exec("UPDATE events SET target = 'workspace:someone-else' WHERE seq = 3");
    });
    const result = await verify(ws.adminToken);
    expect(result.ok).toBe(false);
    expect(result.errors).toContain("event 3: its leaf does not hash to its hash");
  });

  it("catches a truncated tail: the log now has fewer events than a checkpoint saved earlier", async () => {
    const ws = await workspaceWithEvents(8);
    const saved = await verify(ws.adminToken);
    expect(saved.ok).toBe(true);
    const keep = saved.size - 3;
    await outboxSettled(ws.workspace.id);
    // The service drops its last three events (and their tree nodes) and signs what is left.
    const log = auditLog(env, ws.workspace.id);
    await runInDurableObject(log, (_o: AuditLog, state) => {
      state.storage.sql.exec("DELETE FROM events WHERE seq > ?", keep);
      state.storage.sql.exec("DELETE FROM tree_nodes WHERE (idx + 1) << level > ?", keep);
    });
    await evictDurableObject(log);
    const alone = await verify(ws.adminToken);
    expect(alone.ok).toBe(true); // a truncated log is self-consistent: only the saved checkpoint shows it
    const result = await verify(ws.adminToken, saved.checkpoint);
    expect(result.ok).toBe(false);
    expect(result.errors).toEqual([
      `saved checkpoint: the log has ${keep} events but a checkpoint saved earlier had ${saved.size}: its tail was truncated (or rolled back)`,
    ]);
  });

  it("catches a forked history: a checkpoint saved earlier, validly signed, that this log does not extend", async () => {
    const ws = await workspaceWithEvents(5);
    const now = await verify(ws.adminToken);
    const signer = await auditSigner(env, ORIGIN);
    const origin = `svc.test/audit/${ws.workspace.id}`;
    const otherRoot = b64(sha256(new TextEncoder().encode("another history")));
    // What the service showed someone else earlier: a shorter tree with another root.
    const shorter = await verify(ws.adminToken, await signedCheckpoint(signer, origin, now.size - 2, otherRoot));
    expect(shorter.ok).toBe(false);
    expect(shorter.errors[0]).toMatch(/does not extend the saved one .*the log forked/);
    const same = await verify(ws.adminToken, await signedCheckpoint(signer, origin, now.size, otherRoot));
    expect(same.errors).toEqual([
      `saved checkpoint: same size ${now.size}, another root: the log forked (another history)`,
    ]);
    // A checkpoint not signed by the log key proves nothing either way.
    const forged = (await signedCheckpoint(signer, origin, 1, otherRoot)).replace(/ (\S+)\n$/u, " AAAA\n");
    expect((await verify(ws.adminToken, forged)).errors[0]).toMatch(/^saved checkpoint: no valid signature/);
  });

  it("refuses a checkpoint the log key did not sign", async () => {
    const ws = await workspaceWithEvents(1);
    const lying: typeof fetch = async (input, init) => {
      const res = await serviceFetch(input, init);
      if (!String(input).endsWith("/v1/admin/audit/checkpoint")) return res;
      const note = await res.text();
      return new Response(
        note.replace(/\n(\d+)\n/u, (_m, n: string) => `\n${Number(n) + 1}\n`),
        { status: 200 },
      );
    };
    const result = await verify(ws.adminToken, null, lying);
    expect(result.ok).toBe(false);
    expect(result.errors[0]).toMatch(/^checkpoint: no valid signature by the log key svc\.test\/audit$/);
    // A pinned log key (as published) that the service no longer serves.
    const pinned = await verifyAuditLog({
      url: ORIGIN,
      token: ws.adminToken,
      key: vectors.go_sumdb_note_example.verifier_key,
      fetch: serviceFetch,
    });
    expect(pinned.ok).toBe(false);
    expect(pinned.errors[0]).toMatch(/^log key: the service publishes svc\.test\/audit\+[0-9a-f]{8}\+/);
    const served = (await (await serviceFetch(`${ORIGIN}/v1/audit/log-key`)).text()).trim();
    expect((await verifyAuditLog({ url: ORIGIN, token: ws.adminToken, key: served, fetch: serviceFetch })).ok).toBe(
      true,
    );
  });
});
