import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { canonicalJson, detailsDigest, entryHash, GENESIS_HASH } from "../durable-objects/audit-log/chain";
import { auditLog } from "../durable-objects/audit-log/client";
import type { AppendEvent } from "../durable-objects/audit-log/types";
import { AUDIT_EVENTS } from "../src/audit/events";
import { AuditListSchema, VerifyResultSchema } from "../src/audit-log/schemas";
import { call, expectProblem, parse } from "./support/api";
import { addUser, signupWorkspace } from "./support/seed";

const event = (i: number, over: Partial<AppendEvent> = {}): AppendEvent => ({
  kind: "test.event",
  outcome: "success",
  actorKind: "system",
  actorId: null,
  agentId: null,
  conversationId: null,
  target: `thing:${i}`,
  intent: "poke",
  subjectUserId: null,
  details: { i },
  ...over,
});

describe("hash chain", () => {
  it("links entries from the genesis hash with hashes anyone can recompute", async () => {
    const log = auditLog(env, crypto.randomUUID());
    const [a, b] = await log.append([event(1), event(2)]);
    expect(a!.seq).toBe(1);
    expect(b!.seq).toBe(2);
    const { events } = await log.list({ days: 0 }, { page: 1, pageSize: 10 });
    const first = events.find((e) => e.seq === 1)!;
    const second = events.find((e) => e.seq === 2)!;
    expect(first.prev_hash).toBe(GENESIS_HASH);
    expect(second.prev_hash).toBe(first.hash);
    expect(
      entryHash({
        seq: 2,
        occurredAt: second.occurred_at,
        kind: second.kind,
        outcome: second.outcome,
        actorKind: second.actor_kind,
        actorId: second.actor_id,
        agentId: second.agent_id,
        conversationId: second.conversation_id,
        target: second.target,
        intent: second.intent,
        detailsDigest: second.details_digest,
        prevHash: second.prev_hash,
      }),
    ).toBe(second.hash);
    expect(await log.verify(10)).toEqual({
      ok: true,
      checked: 2,
      first_seq: 1,
      last_seq: 2,
      failure_seq: null,
      break_type: null,
    });
  });

  it("canonicalizes details with sorted keys, so equal data digests equally", () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[1,{"y":2,"z":1}]},"b":1}',
    );
    const salt = "00".repeat(16);
    expect(detailsDigest(salt, canonicalJson({ a: 1, b: 2 }))).toBe(detailsDigest(salt, canonicalJson({ b: 2, a: 1 })));
  });

  it("digests details as SHA-256(salt bytes ‖ UTF-8 details), whatever their size or script", async () => {
    // details_digest = SHA-256(salt ‖ canonical(details)): recomputed here with WebCrypto.
    const reference = async (saltHex: string, details: string) => {
      const salt = Uint8Array.from(saltHex.match(/../g)!.map((b) => Number.parseInt(b, 16)));
      const text = new TextEncoder().encode(details);
      const digest = await crypto.subtle.digest("SHA-256", new Uint8Array([...salt, ...text]));
      return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
    };
    const salt = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";
    for (const details of [{}, { name: "Zoë Ångström", note: "日本語 ✓ 🙂" }, { big: "x".repeat(10_000) }]) {
      const text = canonicalJson(details);
      expect(detailsDigest(salt, text)).toBe(await reference(salt, text));
    }
    expect(detailsDigest("not hex", "{}")).toBe("");
  });

  it("finds a rewritten row as a content break at its seq", async () => {
    const stub = auditLog(env, crypto.randomUUID());
    await stub.append([1, 2, 3, 4, 5].map((i) => event(i)));
    await runInDurableObject(stub, (_obj, state) => {
      state.storage.sql.exec("UPDATE events SET target = 'thing:forged' WHERE seq = 3");
    });
    expect(await stub.verify(100)).toMatchObject({ ok: false, failure_seq: 3, break_type: "content" });
  });

  it("finds rewritten details as a content break even when the hash is left alone", async () => {
    const stub = auditLog(env, crypto.randomUUID());
    await stub.append([1, 2, 3].map((i) => event(i)));
    await runInDurableObject(stub, (_obj, state) => {
      state.storage.sql.exec(`UPDATE events SET details = '{"i":99}' WHERE seq = 2`);
    });
    expect(await stub.verify(100)).toMatchObject({ ok: false, failure_seq: 2, break_type: "content" });
  });

  it("finds a rewritten prev_hash as a linkage break, and a deleted row too", async () => {
    const stub = auditLog(env, crypto.randomUUID());
    await stub.append([1, 2, 3, 4].map((i) => event(i)));
    await runInDurableObject(stub, (_obj, state) => {
      state.storage.sql.exec(`UPDATE events SET prev_hash = '${"f".repeat(64)}' WHERE seq = 3`);
    });
    expect(await stub.verify(100)).toMatchObject({ ok: false, failure_seq: 3, break_type: "linkage" });

    const other = auditLog(env, crypto.randomUUID());
    await other.append([1, 2, 3, 4].map((i) => event(i)));
    await runInDurableObject(other, (_obj, state) => {
      state.storage.sql.exec("DELETE FROM events WHERE seq = 2");
    });
    expect(await other.verify(100)).toMatchObject({ ok: false, failure_seq: 3, break_type: "linkage" });
  });

  it("anchors the window on the entry before it", async () => {
    const stub = auditLog(env, crypto.randomUUID());
    await stub.append(Array.from({ length: 10 }, (_, i) => event(i + 1)));
    expect(await stub.verify(4)).toEqual({
      ok: true,
      checked: 4,
      first_seq: 7,
      last_seq: 10,
      failure_seq: null,
      break_type: null,
    });
    // Break the anchor's hash: the window's first prev_hash no longer matches it.
    await runInDurableObject(stub, (_obj, state) => {
      state.storage.sql.exec(`UPDATE events SET hash = '${"a".repeat(64)}' WHERE seq = 6`);
    });
    expect(await stub.verify(4)).toMatchObject({ ok: false, failure_seq: 7, break_type: "linkage" });
    // A window that starts after the damage does not see it.
    expect((await stub.verify(3)).ok).toBe(true);
  });

  it("keeps seqs contiguous and the chain whole under 100 concurrent appends", async () => {
    const stub = auditLog(env, crypto.randomUUID());
    const results = await Promise.all(Array.from({ length: 100 }, (_, i) => stub.append([event(i)])));
    const seqs = results.map((r) => r[0]!.seq).sort((a, b) => a - b);
    expect(seqs).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(await stub.verify(1000)).toMatchObject({ ok: true, checked: 100 });
  });

  it("keeps only the detail fields its kind names, so secrets never reach the log", () => {
    const details = AUDIT_EVENTS["token.create"].parse({
      name: "ci",
      scopes: ["a"],
      token: "svc_pat_secret",
      password: "p",
      authorization: "Bearer x",
    });
    expect(details).toEqual({ name: "ci", scopes: ["a"] });
  });
});

describe("GET /v1/admin/audit", () => {
  it("records 100 concurrent state changes of one workspace with contiguous seqs and a chain that verifies", async () => {
    const ws = await signupWorkspace();
    const responses = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        call("POST", "/v1/api/admin/tokens", {
          token: ws.adminToken,
          body: { name: `t${i}`, scopes: ["agents:read"] },
        }),
      ),
    );
    expect(responses.every((r) => r.status === 201)).toBe(true);
    const list = await parse(
      await call("GET", "/v1/admin/audit?kind=token.create&page_size=200", { token: ws.adminToken }),
      AuditListSchema,
    );
    expect(list.total).toBe(100);
    const all = await parse(
      await call("GET", "/v1/admin/audit?days=0&page_size=200", { token: ws.adminToken }),
      AuditListSchema,
    );
    const seqs = all.events.map((e) => e.seq).sort((a, b) => a - b);
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    const verify = await parse(
      await call("GET", "/v1/admin/audit/verify", { token: ws.adminToken }),
      VerifyResultSchema,
    );
    expect(verify).toMatchObject({ ok: true, checked: all.total, first_seq: 1, last_seq: all.total });
  });

  it("records every state change of the foundation without secrets", async () => {
    const ws = await signupWorkspace();
    const member = await addUser(ws.adminToken, "member", ["agents:read"]);
    await expectProblem(await call("GET", "/v1/api/admin/users", { token: member.token }), 403);
    const tokens = (await (await call("GET", "/v1/api/admin/tokens", { token: ws.adminToken })).json()) as {
      tokens: { id: string }[];
    };
    await call("DELETE", `/v1/api/admin/tokens/${tokens.tokens.find((t) => t.id)!.id}`, { token: ws.adminToken });
    const res = await call("GET", "/v1/admin/audit", {
      token: (await addUser(ws.adminToken, "admin", ["admin"])).token,
    });
    const text = await res.clone().text();
    const list = await parse(res, AuditListSchema);
    const kinds = list.events.map((e) => e.kind);
    for (const k of ["workspace.signup", "user.create", "token.create", "access.denied", "token.revoke"])
      expect(kinds).toContain(k);
    const denied = list.events.find((e) => e.kind === "access.denied")!;
    expect(denied).toMatchObject({ outcome: "denied", actor_kind: "token", actor_id: member.user.id });
    expect(text).not.toContain(ws.adminToken);
    expect(text).not.toContain(member.token);
    expect(text).not.toMatch(/svc_pat_[A-Za-z0-9_-]{43}/);
    expect(text).not.toContain("correct horse");
  });

  it("filters, pages newest first, clamps page_size and reports the total", async () => {
    const ws = await signupWorkspace();
    const log = auditLog(env, ws.workspace.id);
    const agentId = crypto.randomUUID();
    const conversationId = crypto.randomUUID();
    await log.append([
      event(1, { kind: "agent.update", agentId, target: "agent:ABC", intent: "Rename" }),
      event(2, { kind: "agent.update", outcome: "denied", actorKind: "token" }),
      event(3, { kind: "conversation.create", conversationId }),
    ]);
    const get = async (qs: string) =>
      parse(await call("GET", `/v1/admin/audit?${qs}`, { token: ws.adminToken }), AuditListSchema);
    expect((await get("kind=agent.update")).total).toBe(2);
    expect((await get("kind=agent.update&outcome=denied")).events.map((e) => e.outcome)).toEqual(["denied"]);
    expect((await get("actor_kind=token&kind=agent.update")).total).toBe(1);
    expect((await get(`agent_id=${agentId}`)).events.map((e) => e.target)).toEqual(["agent:ABC"]);
    expect((await get(`conversation_id=${conversationId}`)).total).toBe(1);
    expect((await get("q=abc")).events.map((e) => e.target)).toEqual(["agent:ABC"]);
    expect((await get("q=rENAME")).total).toBe(1);
    expect((await get("q=100%25")).total).toBe(0);

    const page = await get("page=1&page_size=2&days=0");
    expect(page.page_size).toBe(2);
    expect(page.events).toHaveLength(2);
    expect(page.events[0]!.seq).toBeGreaterThan(page.events[1]!.seq);
    expect(page.total).toBeGreaterThan(2);
    const clamped = await get("page_size=1000");
    expect(clamped.page_size).toBe(200);
    expect((await get("page_size=0")).page_size).toBe(1);
    expect((await get("page=0")).page).toBe(1);
  });

  it("matches q of any length and bytes as a plain substring: no pattern limit, no wildcards", async () => {
    const ws = await signupWorkspace();
    const long = "é".repeat(200);
    await auditLog(env, ws.workspace.id).append([
      event(1, { kind: "q.test", target: `thing:${long}`, intent: "poke" }),
      event(2, { kind: "q.test", target: "thing:100%_\\done", intent: "poke" }),
      event(3, { kind: "q.test", target: "thing:100x", intent: "poke" }),
    ]);
    const get = async (q: string) =>
      parse(
        await call("GET", `/v1/admin/audit?kind=q.test&q=${encodeURIComponent(q)}`, { token: ws.adminToken }),
        AuditListSchema,
      );
    // SQLite refuses LIKE patterns over 50 bytes; 25 two-byte letters were already a 500.
    expect((await get("é".repeat(25))).total).toBe(1);
    expect((await get(long)).total).toBe(1);
    expect((await get("€".repeat(200))).total).toBe(0);
    expect((await get("100%_\\")).events.map((e) => e.target)).toEqual(["thing:100%_\\done"]);
    expect((await get("%")).total).toBe(1);
    expect((await get("_")).total).toBe(1);
    expect((await get("THING:100")).total).toBe(2);
  });

  // spec: "`q` (string, case-insensitive substring match on `target` and `intent`)" — no limit; 200, 403 only
  it("answers a q, kind, outcome or actor_kind of any length a URL carries with 200", async () => {
    const ws = await signupWorkspace();
    const long = "é".repeat(2000); // 12 000 characters once encoded, under the 16 KB a Cloudflare URL may carry
    await auditLog(env, ws.workspace.id).append([
      event(1, { kind: "q.long", target: `thing:${long}`, intent: "poke" }),
    ]);
    const get = async (qs: string) =>
      parse(await call("GET", `/v1/admin/audit?${qs}`, { token: ws.adminToken }), AuditListSchema);
    expect((await get(`kind=q.long&q=${encodeURIComponent(long)}`)).total).toBe(1);
    expect((await get(`kind=q.long&q=${encodeURIComponent(`${long}x`)}`)).total).toBe(0);
    expect((await get(`q=${"a".repeat(8000)}`)).total).toBe(0);
    for (const name of ["kind", "outcome", "actor_kind"])
      expect((await get(`${name}=${"k".repeat(8000)}`)).total).toBe(0);
  });

  it("limits the lookback to 90 days by default; 0 or negative days is all time", async () => {
    const ws = await signupWorkspace();
    const stub = auditLog(env, ws.workspace.id);
    await stub.append([event(1, { kind: "old.event" })]);
    await runInDurableObject(stub, (_obj, state) => {
      state.storage.sql.exec("UPDATE events SET occurred_at = '2020-01-01T00:00:00.000Z' WHERE kind = 'old.event'");
    });
    const get = async (qs: string) =>
      parse(await call("GET", `/v1/admin/audit?kind=old.event${qs}`, { token: ws.adminToken }), AuditListSchema);
    expect((await get("")).total).toBe(0);
    expect((await get("&days=0")).total).toBe(1);
    expect((await get("&days=-5")).total).toBe(1);
    expect((await get("&days=100000")).total).toBe(1);
    // A lookback past the earliest date JavaScript can represent is all time too.
    expect((await get("&days=9007199254740991")).total).toBe(1);
    expect((await get("&days=-9007199254740991")).total).toBe(1);
    // Beyond a safe integer is refused, as the document declares (minimum/maximum).
    for (const days of ["9007199254740992", "-9007199254740992", "999999999999999999"])
      await expectProblem(
        await call("GET", `/v1/admin/audit?days=${days}`, { token: ws.adminToken }),
        400,
        "validation_failed",
      );
    expect((await get("&days=100000000")).total).toBe(1);
  });

  it("refuses members (403), non-numbers and bad uuids (400), and isolates workspaces", async () => {
    const a = await signupWorkspace();
    const b = await signupWorkspace();
    const member = await addUser(a.adminToken, "member", ["agents:read"]);
    await expectProblem(await call("GET", "/v1/admin/audit", { token: member.token }), 403, "admin_required");
    await expectProblem(await call("GET", "/v1/admin/audit/verify", { token: member.token }), 403, "admin_required");
    await expectProblem(
      await call("GET", "/v1/admin/audit?page=abc", { token: a.adminToken }),
      400,
      "validation_failed",
    );
    await expectProblem(
      await call("GET", "/v1/admin/audit?agent_id=nope", { token: a.adminToken }),
      400,
      "validation_failed",
    );
    await expectProblem(
      await call("GET", "/v1/admin/audit/verify?limit=x", { token: a.adminToken }),
      400,
      "validation_failed",
    );
    const list = await parse(
      await call("GET", "/v1/admin/audit?days=0&page_size=200", { token: a.adminToken }),
      AuditListSchema,
    );
    expect(JSON.stringify(list)).not.toContain(b.workspace.id);
  });

  it("clamps the verify limit to 1-100000", async () => {
    const ws = await signupWorkspace();
    await auditLog(env, ws.workspace.id).append([event(1), event(2), event(3)]);
    const one = await parse(
      await call("GET", "/v1/admin/audit/verify?limit=0", { token: ws.adminToken }),
      VerifyResultSchema,
    );
    expect(one.checked).toBe(1);
    const big = await parse(
      await call("GET", "/v1/admin/audit/verify?limit=99999999", { token: ws.adminToken }),
      VerifyResultSchema,
    );
    expect(big.ok).toBe(true);
    expect(big.first_seq).toBe(1);
  });
});
