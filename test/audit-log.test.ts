import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { auditLog } from "../durable-objects/audit-log/client";
import type { AppendEvent } from "../durable-objects/audit-log/types";

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

const listAll = (log: ReturnType<typeof freshLog>) => log.list({ days: 0 }, { page: 1, pageSize: 200 });

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

    expect(await log.verify(1000)).toEqual({
      ok: true,
      checked: 64,
      first_seq: 1,
      last_seq: 64,
      failure_seq: null,
      break_type: null,
    });
  });

  it("keeps each multi-event append contiguous and in order when appends arrive together", async () => {
    const log = freshLog();
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => log.append([event(i * 3), event(i * 3 + 1), event(i * 3 + 2)])),
    );
    for (const written of results) {
      expect(written).toHaveLength(3);
      expect(written[1]!.seq).toBe(written[0]!.seq + 1);
      expect(written[2]!.seq).toBe(written[0]!.seq + 2);
    }
    const listed = await listAll(log);
    for (const written of results) {
      const details = written.map(
        (w) => (JSON.parse(listed.events.find((e) => e.seq === w.seq)!.details) as { n: number }).n,
      );
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
    expect(listed.events.map((e) => (JSON.parse(e.details) as { n: number }).n).sort()).toEqual([1, 2, 3]);
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

/** Runs SQL inside the object, as an attacker with storage access would. */
const tamper = (log: ReturnType<typeof freshLog>, sql: string, ...params: (string | number)[]) =>
  runInDurableObject(log, (_instance, state) => {
    state.storage.sql.exec(sql, ...params);
  });

async function chainOf(n: number) {
  const log = freshLog();
  await log.append(Array.from({ length: n }, (_, i) => event(i + 1)));
  return log;
}

describe("AuditLog verify", () => {
  it("verifies a chain longer than one read chunk, and only the last `limit` entries when asked", async () => {
    const log = await chainOf(4500);
    expect(await log.verify(100_000)).toEqual({
      ok: true,
      checked: 4500,
      first_seq: 1,
      last_seq: 4500,
      failure_seq: null,
      break_type: null,
    });
    expect(await log.verify(2500)).toEqual({
      ok: true,
      checked: 2500,
      first_seq: 2001,
      last_seq: 4500,
      failure_seq: null,
      break_type: null,
    });
  });

  it("verifies the chain as it was when verification started while appends interleave", async () => {
    const log = await chainOf(4500);
    const [during, ...appended] = await Promise.all([
      log.verify(100_000),
      ...Array.from({ length: 10 }, (_, i) => log.append([event(5000 + i)])),
    ]);
    expect(during).toMatchObject({ ok: true, checked: 4500, last_seq: 4500 });
    expect(appended.map((w) => w[0]!.seq).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 10 }, (_, i) => 4501 + i),
    );
    expect(await log.verify(100_000)).toMatchObject({ ok: true, checked: 4510, last_seq: 4510 });
  });

  it("verifies an empty chain as ok with nothing checked", async () => {
    expect(await freshLog().verify(10)).toEqual({
      ok: true,
      checked: 0,
      first_seq: null,
      last_seq: null,
      failure_seq: null,
      break_type: null,
    });
  });

  it("reports changed details as a content break at that entry", async () => {
    const log = await chainOf(10);
    await tamper(log, "UPDATE events SET details = ? WHERE seq = ?", '{"n":999}', 3);
    expect(await log.verify(100)).toEqual({
      ok: false,
      checked: 3,
      first_seq: 1,
      last_seq: 3,
      failure_seq: 3,
      break_type: "content",
    });
  });

  it("reports a changed hashed field as a content break, even past the first read chunk", async () => {
    const log = await chainOf(2100);
    await tamper(log, "UPDATE events SET target = ? WHERE seq = ?", "agent:someone-else", 2050);
    expect(await log.verify(100_000)).toMatchObject({
      ok: false,
      checked: 2050,
      failure_seq: 2050,
      break_type: "content",
    });
  });

  it("reports a rewritten prev_hash or a deleted entry as a linkage break", async () => {
    const rewritten = await chainOf(10);
    await tamper(rewritten, "UPDATE events SET prev_hash = ? WHERE seq = ?", "f".repeat(64), 5);
    expect(await rewritten.verify(100)).toMatchObject({ ok: false, failure_seq: 5, break_type: "linkage" });

    const deleted = await chainOf(10);
    await tamper(deleted, "DELETE FROM events WHERE seq = ?", 6);
    expect(await deleted.verify(100)).toMatchObject({ ok: false, checked: 6, failure_seq: 7, break_type: "linkage" });
  });

  it("reports a stored hash, digest or salt rewritten to another spelling as a content break", async () => {
    const upper = await chainOf(5);
    await tamper(upper, "UPDATE events SET details_digest = upper(details_digest) WHERE seq = ?", 2);
    expect(await upper.verify(100)).toMatchObject({ ok: false, checked: 2, failure_seq: 2, break_type: "content" });

    // The next entry's prev_hash is left alone: the stored hash itself no longer matches.
    const hash = await chainOf(5);
    await tamper(hash, "UPDATE events SET hash = upper(hash) WHERE seq = ?", 5);
    expect(await hash.verify(100)).toMatchObject({ ok: false, checked: 5, failure_seq: 5, break_type: "content" });

    const salt = await chainOf(5);
    await tamper(salt, "UPDATE events SET salt = ? WHERE seq = ?", "not hex at all", 3);
    expect(await salt.verify(100)).toMatchObject({ ok: false, checked: 3, failure_seq: 3, break_type: "content" });
  });

  it("still verifies once an entry's details are redacted and its salt dropped, as erasure does", async () => {
    const log = await chainOf(5);
    await tamper(log, "UPDATE events SET details = ?, salt = NULL WHERE seq = ?", '{"redacted":true}', 2);
    expect(await log.verify(100)).toMatchObject({ ok: true, checked: 5 });
  });
});
