import { evictDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { AppendEvent, ListResult } from "../durable-objects/audit-log/types";
import { auditLog } from "../src/audit/client";

const event = (n: number, overrides: Partial<AppendEvent> = {}): AppendEvent => ({
  kind: "agent.update",
  outcome: "success",
  actorKind: "token",
  actorId: crypto.randomUUID(),
  agentId: null,
  conversationId: null,
  target: `agent:${crypto.randomUUID()}`,
  intent: "update",
  subjectUserId: null,
  details: { n },
  ...overrides,
});

const freshLog = () => auditLog(env, crypto.randomUUID());

// The RPC stub types `details: Record<string, unknown>` as never; the value is the plain ListResult.
const listAll = async (log: ReturnType<typeof freshLog>) =>
  (await log.list({ days: 0 }, { page: 1, pageSize: 200 })) as unknown as ListResult;

describe("AuditLog append under concurrency", () => {
  it("gives 64 concurrent appends distinct gap-free sequence numbers on one unforked chain", async () => {
    const log = freshLog();
    const results = await Promise.all(Array.from({ length: 64 }, (_, i) => log.append([event(i)])));
    const seqs = results.map((r) => r[0]!.seq).sort((a, b) => a - b);
    expect(seqs).toEqual(Array.from({ length: 64 }, (_, i) => i + 1));

    const listed = await listAll(log);
    expect(listed.total).toBe(64);
    const bySeq = new Map(listed.events.map((e) => [e.seq, e]));
    for (const r of results) expect(bySeq.get(r[0]!.seq)?.hash).toBe(r[0]!.hash);
    for (let seq = 2; seq <= 64; seq++) expect(bySeq.get(seq)?.prev_hash).toBe(bySeq.get(seq - 1)?.hash);

    expect(await log.verify(1000)).toEqual({ ok: true, checked: 64, first_seq: 1, last_seq: 64, failure_seq: null, break_type: null });
  });

  it("keeps each multi-event append contiguous and in order when appends arrive together", async () => {
    const log = freshLog();
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => log.append([event(i * 3), event(i * 3 + 1), event(i * 3 + 2)])));
    for (const written of results) {
      expect(written).toHaveLength(3);
      expect(written[1]!.seq).toBe(written[0]!.seq + 1);
      expect(written[2]!.seq).toBe(written[0]!.seq + 2);
    }
    const listed = await listAll(log);
    for (const written of results) {
      const details = written.map((w) => listed.events.find((e) => e.seq === w.seq)?.details.n as number);
      expect(details[1]).toBe(details[0]! + 1);
      expect(details[2]).toBe(details[0]! + 2);
    }
    expect((await log.verify(1000)).ok).toBe(true);
  });

  it("rejects a failing append alone, rolls back its partial writes and keeps the chain gap-free", async () => {
    const log = freshLog();
    // The second event breaks a NOT NULL column after the first was inserted.
    const broken = [event(100), event(101, { kind: null as unknown as string })];
    const outcomes = await Promise.allSettled([
      log.append([event(1)]),
      log.append(broken),
      log.append([event(2)]),
      log.append([event(3)]),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled", "fulfilled"]);
    const seqs = outcomes.flatMap((o) => (o.status === "fulfilled" ? o.value.map((w) => w.seq) : []));
    expect(seqs.sort()).toEqual([1, 2, 3]);

    const listed = await listAll(log);
    expect(listed.total).toBe(3);
    expect(listed.events.map((e) => e.details.n).sort()).toEqual([1, 2, 3]);
    expect(await log.verify(1000)).toMatchObject({ ok: true, checked: 3, last_seq: 3 });

    // The head did not move past the rolled-back event: the next append follows seq 3.
    const [next] = await log.append([event(4)]);
    expect(next!.seq).toBe(4);
    expect((await log.verify(1000)).ok).toBe(true);
  });

  it("resumes from the stored head after the object is evicted and re-created", async () => {
    const log = freshLog();
    const written = await log.append([event(1), event(2)]);
    await evictDurableObject(log);
    const [next] = await log.append([event(3)]);
    expect(next!.seq).toBe(3);
    const listed = await listAll(log);
    expect(listed.events.find((e) => e.seq === 3)?.prev_hash).toBe(written[1]!.hash);
    expect((await log.verify(1000)).ok).toBe(true);
  });
});
