import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { AuditLog } from "../durable-objects/audit-log";
import { auditLog } from "../durable-objects/audit-log/client";
import type { AppendEvent, AuditEvent } from "../durable-objects/audit-log/types";
import { b64, leafOf, mth, sha256, unb64, verifyConsistency, verifyInclusion } from "./support/rfc9162";

/** The leaf bytes written from the event's fields as docs/audit-log.md gives the chain's encoding. */
const leafBytes = (e: AuditEvent) =>
  new TextEncoder().encode(
    JSON.stringify([
      "v1",
      e.prev_hash,
      e.seq,
      e.occurred_at,
      e.kind,
      e.outcome,
      e.actor_kind,
      e.actor_id,
      e.agent_id,
      e.conversation_id,
      e.target,
      e.intent,
      e.details_digest,
    ]),
  );

const event = (n: number, subject: string | null = null): AppendEvent => ({
  kind: "agent.update",
  outcome: "success",
  actorKind: "token",
  actorId: crypto.randomUUID(),
  agentId: null,
  conversationId: null,
  target: `agent:${n}`,
  intent: "update",
  subjectUserId: subject,
  details: { n, email: "someone@example.com" },
});

type Log = ReturnType<typeof auditLog>;

async function leavesOf(log: Log): Promise<Uint8Array[]> {
  const { events } = await log.list({ days: 0 }, { page: 1, pageSize: 100_000 });
  return events.sort((a, b) => a.seq - b.seq).map(leafBytes);
}

/** Every position up to `size` when there are few, else the edges, the powers of two and a spread between. */
function positions(size: number): number[] {
  if (size <= 40) return Array.from({ length: size }, (_, i) => i + 1);
  const picks = new Set([1, 2, size - 1, size]);
  for (let p = 1; p < size; p *= 2) picks.add(p).add(p + 1);
  for (let i = 1; i < 8; i++) picks.add(Math.floor((size * i) / 8));
  return [...picks];
}

/** The root of every size up to the head, and inclusion and consistency proofs at each, checked independently. */
async function expectAllProofsValid(log: Log, leaves: Uint8Array[]) {
  const leafHashes = leaves.map(leafOf);
  const roots = [sha256(), ...leaves.map((_, i) => mth(leaves.slice(0, i + 1)))];
  await runInDurableObject(log, (o: AuditLog) => {
    expect(o.treeHead()).toEqual({ size: leaves.length, root: b64(roots[leaves.length]!) });
    for (let size = 1; size <= leaves.length; size++) {
      for (const seq of positions(size)) {
        const p = o.inclusionProof(seq, size)!;
        expect(p.leaf_index).toBe(seq - 1);
        if (!verifyInclusion(seq - 1, size, leafHashes[seq - 1]!, p.hashes.map(unb64), roots[size]!))
          expect.fail(`inclusion of ${seq} in ${size}`);
      }
      for (const from of positions(size)) {
        const p = o.consistencyProof(from, size)!;
        if (!verifyConsistency(from, size, roots[from]!, roots[size]!, p.hashes.map(unb64)))
          expect.fail(`consistency of ${from} with ${size}`);
      }
    }
  });
}

describe("the audit log's Merkle tree (RFC 9162)", () => {
  it("proves inclusion and consistency for every tree size 1..300, checked by an independent verifier", async () => {
    const log = auditLog(env, crypto.randomUUID());
    // Single appends, a batch, and appends that arrive together (one shared transaction).
    for (let i = 0; i < 5; i++) await log.append([event(i)]);
    await log.append(Array.from({ length: 195 }, (_, i) => event(5 + i)));
    await Promise.all(Array.from({ length: 50 }, (_, i) => log.append([event(200 + 2 * i), event(201 + 2 * i)])));
    const leaves = await leavesOf(log);
    expect(leaves).toHaveLength(300);
    await expectAllProofsValid(log, leaves);
  });

  it("answers null for a size beyond the tree, a seq beyond the size, and from > to", async () => {
    const log = auditLog(env, crypto.randomUUID());
    await log.append([event(1), event(2), event(3)]);
    expect(await log.inclusionProof(1, 4)).toBeNull();
    expect(await log.inclusionProof(3, 2)).toBeNull();
    expect(await log.inclusionProof(0, 3)).toBeNull();
    expect(await log.consistencyProof(3, 2)).toBeNull();
    expect(await log.consistencyProof(1, 4)).toBeNull();
    expect(await log.consistencyProof(0, 3)).toBeNull();
    expect(await log.consistencyProof(3, 3)).toEqual({ from: 3, to: 3, hashes: [] });
    expect(await log.treeHead()).toMatchObject({ size: 3 });
  });

  it("keeps every proof valid after erasure (the leaf holds the details' digest, not the details)", async () => {
    const log = auditLog(env, crypto.randomUUID());
    const user = crypto.randomUUID();
    await log.append(Array.from({ length: 20 }, (_, i) => event(i, i % 3 === 0 ? user : null)));
    const before = await log.treeHead();
    const leaves = await leavesOf(log);
    expect(await log.redactUser(user)).toBe(7);
    expect(await log.treeHead()).toEqual(before);
    expect(await leavesOf(log)).toEqual(leaves);
    await expectAllProofsValid(log, leaves);
  });

  it("rolls a failed append's leaves back with its rows", async () => {
    const log = auditLog(env, crypto.randomUUID());
    const outcomes = await Promise.allSettled([
      log.append([event(1)]),
      log.append([event(2), { ...event(3), kind: null as unknown as string }]),
      log.append([event(4)]),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    const leaves = await leavesOf(log);
    expect(leaves).toHaveLength(2);
    await expectAllProofsValid(log, leaves);
  });

  it("stores the nodes of appends that arrive together with their group, leaving out only a failed append's", async () => {
    const log = auditLog(env, crypto.randomUUID());
    // 40 appends in one group: more nodes than one INSERT holds, two failures in the middle.
    const outcomes = await Promise.allSettled(
      Array.from({ length: 40 }, (_, i) =>
        log.append(i === 10 || i === 25 ? [event(i), { ...event(i), kind: null as unknown as string }] : [event(i)]),
      ),
    );
    expect(outcomes.filter((o) => o.status === "rejected")).toHaveLength(2);
    // Read back from storage, not from the nodes the object keeps in memory.
    await evictDurableObject(log);
    const leaves = await leavesOf(log);
    expect(leaves).toHaveLength(38);
    await runInDurableObject(log, (_o: AuditLog, state) => {
      // Every perfect subtree of 38 leaves, once: 38 + 19 + 9 + 4 + 2 + 1.
      const rows = state.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM tree_nodes").one().n;
      expect(rows).toBe(73);
    });
    await expectAllProofsValid(log, leaves);
  });

  it("builds the tree of a chain written before the tree existed when its object wakes", async () => {
    const log = auditLog(env, crypto.randomUUID());
    await log.append(Array.from({ length: 37 }, (_, i) => event(i)));
    const before = await log.treeHead();
    await runInDurableObject(log, (_o: AuditLog, state) => {
      state.storage.sql.exec("DELETE FROM tree_nodes");
    });
    await evictDurableObject(log);
    expect(await log.treeHead()).toEqual(before);
    await log.append([event(37)]);
    await expectAllProofsValid(log, await leavesOf(log));
  });
});
