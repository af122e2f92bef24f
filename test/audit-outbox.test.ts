import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { auditLog } from "../durable-objects/audit-log/client";
import type { AppendEvent } from "../durable-objects/audit-log/types";
import { deliveringAudit, deliverNow } from "../src/audit/delivery";
import { type AuditEventInput, auditInBatch, outboxRow } from "../src/audit/events";
import { deliverOutbox, deliverWorkspace, pendingCount, removeDelivered, type Unremoved } from "../src/audit/outbox";
import { auditOutbox } from "../src/db/schema";
import worker from "../src/index";
import { db } from "../src/platform/db";
import { call } from "./support/api";
import { callWith } from "./support/app";
import { auditEvents } from "./support/audit";
import { signupWorkspace } from "./support/seed";

/** Outbox rows seeded by hand (a kind no route of these tests writes), one target each. */
const SEEDED = "app.sleep";
const systemRow = (workspaceId: string, target: string) =>
  outboxRow({ workspaceId, kind: SEEDED, actor: { kind: "system", id: null }, target });

/** An AuditLog namespace whose object cannot be reached (failure injection). */
const unreachableAuditLog = {
  getByName: () => ({ append: () => Promise.reject(new Error("AuditLog unavailable")) }),
};

/** An AuditLog not reached yet: the after-response delivery leaves the rows where they are. */
const lateAuditLog = { getByName: () => ({ append: () => Promise.reject(new Error("AuditLog not reached yet")) }) };

const agentBody = (slug: string) => ({ slug, display_name: slug });

/** A workspace whose own sign-up events are already in its chain, so the outbox starts empty. */
async function settledWorkspace() {
  const ws = await signupWorkspace();
  await deliverNow(env, ws.workspace.id);
  return ws;
}

async function agentCount(workspaceId: string, slug: string) {
  const row = await env.DB.prepare("SELECT count(*) AS n FROM agents WHERE workspace_id = ? AND slug = ?")
    .bind(workspaceId, slug)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

async function verify(token: string) {
  return (await (await call("GET", "/v1/admin/audit/verify", { token })).json()) as {
    ok: boolean;
    checked: number;
    last_seq: number;
  };
}

async function withTrigger<T>(ddl: string, name: string, run: () => Promise<T>): Promise<T> {
  await env.DB.prepare(ddl).run();
  try {
    return await run();
  } finally {
    await env.DB.exec(`DROP TRIGGER IF EXISTS ${name}`);
  }
}

async function runCron() {
  const ctx = createExecutionContext();
  await worker.scheduled!(createScheduledController({ cron: "* * * * *" }), env, ctx);
  await waitOnExecutionContext(ctx);
}

describe("audit outbox: a change and its event commit together", () => {
  it("writes neither the agent nor its event when the event's row cannot be written", async () => {
    const ws = await settledWorkspace();
    const res = await withTrigger(
      `CREATE TRIGGER fail_agent_event BEFORE INSERT ON audit_outbox WHEN NEW.event LIKE '%"agent.create"%'
       BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
      "fail_agent_event",
      () => call("POST", "/v1/agents", { token: ws.adminToken, body: agentBody("doomed") }),
    );
    expect(res.ok).toBe(false); // the injected abort is a constraint error
    expect(await agentCount(ws.workspace.id, "doomed")).toBe(0);
    expect(await pendingCount(env, ws.workspace.id)).toBe(0);
    expect(await auditEvents(ws.workspace.id, "agent.create")).toHaveLength(0);
  });

  it("writes no event when the change itself fails inside the batch", async () => {
    const ws = await settledWorkspace();
    const res = await withTrigger(
      `CREATE TRIGGER fail_agent BEFORE INSERT ON agent_handles WHEN NEW.handle = 'doomed'
       BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
      "fail_agent",
      () => call("POST", "/v1/agents", { token: ws.adminToken, body: agentBody("doomed") }),
    );
    expect(res.ok).toBe(false); // the injected abort is a constraint error
    expect(await agentCount(ws.workspace.id, "doomed")).toBe(0);
    expect(await auditEvents(ws.workspace.id, "agent.create")).toHaveLength(0);
  });

  it("records no event for a conditional change that matched nothing (disabling the default agent)", async () => {
    const ws = await settledWorkspace();
    const { agents } = (await (await call("GET", "/v1/agents", { token: ws.adminToken })).json()) as {
      agents: { id: string; is_default: boolean }[];
    };
    const def = agents.find((a) => a.is_default)!;
    const res = await call("DELETE", `/v1/agents/${def.id}`, { token: ws.adminToken });
    expect(res.status).toBe(400);
    expect(await pendingCount(env, ws.workspace.id)).toBe(0);
    expect(await auditEvents(ws.workspace.id, "agent.disable")).toHaveLength(0);
  });

  it("shows the event in the audit list right after the change, before the after-response delivery ran", async () => {
    const ws = await settledWorkspace();
    const res = await callWith({ AUDIT_LOG: lateAuditLog }, "POST", "/v1/agents", {
      token: ws.adminToken,
      body: agentBody("prompt"),
    });
    expect(res.status).toBe(200);
    const { id } = (await res.json()) as { id: string };
    expect(await pendingCount(env, ws.workspace.id)).toBe(1);

    const list = (await (await call("GET", "/v1/admin/audit?kind=agent.create", { token: ws.adminToken })).json()) as {
      events: { target: string }[];
    };
    expect(list.events.map((e) => e.target)).toEqual([`agent:${id}`]);
    expect(await pendingCount(env, ws.workspace.id)).toBe(0);
  });
});

describe("audit outbox: delivery", () => {
  it("keeps rows while the object is unreachable, then delivers each once; the chain stays whole", async () => {
    const ws = await settledWorkspace();
    const before = await verify(ws.adminToken);
    for (const slug of ["outage-1", "outage-2"]) {
      const res = await callWith({ AUDIT_LOG: unreachableAuditLog }, "POST", "/v1/agents", {
        token: ws.adminToken,
        body: agentBody(slug),
      });
      expect(res.status).toBe(200);
    }
    expect(await pendingCount(env, ws.workspace.id)).toBe(2);

    await deliverOutbox({ ...env, AUDIT_LOG: unreachableAuditLog } as unknown as Env);
    const row = await env.DB.prepare("SELECT attempts, last_error FROM audit_outbox WHERE workspace_id = ? LIMIT 1")
      .bind(ws.workspace.id)
      .first<{ attempts: number; last_error: string }>();
    expect(row).toMatchObject({ attempts: 1 });
    expect(row?.last_error).toContain("AuditLog unavailable");

    await runCron();
    await runCron();
    expect(await pendingCount(env, ws.workspace.id)).toBe(0);
    const created = await auditEvents(ws.workspace.id, "agent.create");
    expect(created.map((e) => e.details.slug)).toEqual(["outage-2", "outage-1"]);
    const after = await verify(ws.adminToken);
    expect(after).toMatchObject({ ok: true, last_seq: before.last_seq + 2 });
  });

  it("lands an outbox row once when flushes race or a delivered row comes back", async () => {
    const ws = await settledWorkspace();
    const d = db(env);
    const entries = Array.from({ length: 5 }, (_, i) => systemRow(ws.workspace.id, `n:${i}`));
    for (const e of entries) await d.insert(auditOutbox).values(e).run();
    const id = ws.workspace.id;
    await Promise.all([deliverWorkspace(env, id), deliverWorkspace(env, id), deliverOutbox(env)]);
    expect(await auditEvents(ws.workspace.id, SEEDED)).toHaveLength(5);

    // A Worker that appended but lost its delete: the row comes back and is skipped, then removed.
    await d.insert(auditOutbox).values(entries[0]!).run();
    expect(await deliverWorkspace(env, id)).toBe(1);
    expect(await pendingCount(env, ws.workspace.id)).toBe(0);
    const events = await auditEvents(ws.workspace.id, SEEDED);
    expect(events.map((e) => e.target).sort()).toEqual(entries.map((e) => JSON.parse(e.event).target).sort());
    expect((await verify(ws.adminToken)).ok).toBe(true);
  });

  it("appends a row delivered twice once: the object answers the place it already has", async () => {
    const ws = await settledWorkspace();
    const row = systemRow(ws.workspace.id, "n:twice");
    await db(env).insert(auditOutbox).values(row).run();
    expect(await deliverWorkspace(env, ws.workspace.id)).toBe(1);
    const [placed] = await auditEvents(ws.workspace.id, SEEDED);

    // The same row handed over again: alone, twice at once, and twice in one batch.
    const event: AppendEvent = { ...(JSON.parse(row.event) as AppendEvent), outboxId: row.id };
    const log = auditLog(env, ws.workspace.id);
    const answers = await Promise.all([log.append([event]), log.append([event]), log.append([event, event])]);
    const place = { seq: placed!.seq, hash: placed!.hash };
    expect(answers).toEqual([[place], [place], [place, place]]);
    // And the Worker delivering it again (its delete was lost): skipped, then removed.
    await db(env).insert(auditOutbox).values(row).run();
    expect(await deliverWorkspace(env, ws.workspace.id)).toBe(1);
    expect(await pendingCount(env, ws.workspace.id)).toBe(0);

    expect((await auditEvents(ws.workspace.id, SEEDED)).map((e) => e.seq)).toEqual([placed!.seq]);
    expect(await verify(ws.adminToken)).toMatchObject({ ok: true, last_seq: placed!.seq });
  });

  it("delivers the rest of a round when a row cannot be appended, and keeps that row with its error", async () => {
    const ws = await settledWorkspace();
    const d = db(env);
    const good = [0, 1, 2].map((i) => systemRow(ws.workspace.id, `n:${i}`));
    const other = (row: (typeof good)[number], suffix: string, event: string) => ({
      ...row,
      id: `${row.id.slice(0, -1)}${suffix}`,
      event,
    });
    await d.insert(auditOutbox).values(good[0]!).run();
    // One the Worker cannot read, and one the object refuses (no kind for a NOT NULL column).
    await d
      .insert(auditOutbox)
      .values(other(good[0]!, "x", "not an event"))
      .run();
    await d.insert(auditOutbox).values(good[1]!).run();
    await d
      .insert(auditOutbox)
      .values(other(good[1]!, "y", JSON.stringify({ ...JSON.parse(good[1]!.event), kind: null })))
      .run();
    await d.insert(auditOutbox).values(good[2]!).run();
    expect(await deliverWorkspace(env, ws.workspace.id)).toBe(3);
    expect((await auditEvents(ws.workspace.id, SEEDED)).map((e) => e.target)).toEqual(["n:2", "n:1", "n:0"]);
    const left = await env.DB.prepare(
      "SELECT event, attempts, last_error FROM audit_outbox WHERE workspace_id = ? ORDER BY id",
    )
      .bind(ws.workspace.id)
      .all<{ event: string; attempts: number; last_error: string }>();
    // Each delivery that meets them counts an attempt: this one, the audit read above, and any
    // after-response delivery of the workspace still running in this isolate.
    const [a, b] = left.results.map((r) => r.attempts);
    expect(a).toBeGreaterThanOrEqual(2);
    expect(b).toBe(a);
    expect(left.results[0]!.event).toBe("not an event");
    expect(left.results.map((r) => r.last_error).join("\n")).toMatch(/NOT NULL|null/i);
    expect((await verify(ws.adminToken)).ok).toBe(true);
    await env.DB.prepare("DELETE FROM audit_outbox WHERE workspace_id = ?").bind(ws.workspace.id).run();
  });

  it("leaves a round's delivered rows to the next read to remove: each row lands once, in order", async () => {
    const ws = await settledWorkspace();
    const id = ws.workspace.id;
    const d = db(env);
    const first = [0, 1].map((i) => systemRow(id, `n:${i}`));
    for (const r of first) await d.insert(auditOutbox).values(r).run();
    const unremoved: Unremoved = { ids: [] };
    expect(await deliverWorkspace(env, id, unremoved)).toBe(2);
    // Appended, still in the outbox until the next read: one D1 transaction a round, not two.
    expect(unremoved.ids).toEqual(first.map((r) => r.id));
    expect(await pendingCount(env, id)).toBe(2);

    const second = systemRow(id, "n:2");
    await d.insert(auditOutbox).values(second).run();
    // The next round removes the first round's rows in its read, so it delivers only the new one.
    expect(await deliverWorkspace(env, id, unremoved)).toBe(1);
    expect(unremoved.ids).toEqual([second.id]);
    expect(await pendingCount(env, id)).toBe(1);
    await removeDelivered(env, unremoved.ids);
    expect(await pendingCount(env, id)).toBe(0);
    expect((await auditEvents(id, SEEDED)).map((e) => e.target)).toEqual(["n:2", "n:1", "n:0"]);
    expect((await verify(ws.adminToken)).ok).toBe(true);
  });

  it("delivers a backlog larger than one round, in order, exactly once", async () => {
    const ws = await settledWorkspace();
    const d = db(env);
    const rows = Array.from({ length: 620 }, (_, i) => systemRow(ws.workspace.id, `n:${i}`));
    for (let i = 0; i < rows.length; i += 50)
      await d.batch(rows.slice(i, i + 50).map((r) => d.insert(auditOutbox).values(r)) as never);
    await deliverOutbox(env); // signup's own after-response delivery may take part of the backlog
    expect(await pendingCount(env, ws.workspace.id)).toBe(0);
    const events = await auditEvents(ws.workspace.id, SEEDED);
    expect(events).toHaveLength(200); // one page
    const { total } = (await (
      await call("GET", `/v1/admin/audit?kind=${SEEDED}`, { token: ws.adminToken })
    ).json()) as {
      total: number;
    };
    expect(total).toBe(620);
    expect(events[0]!.target).toBe("n:619");
    expect((await verify(ws.adminToken)).ok).toBe(true);
  });
});

describe("audit delivery by itself", () => {
  /** The chain as the object holds it, read without delivering first (unlike `auditEvents`). */
  const chain = async (workspaceId: string, kind: string) =>
    (await auditLog(env, workspaceId).list({ days: 0, kind }, { page: 1, pageSize: 50 })).events;

  it("a delivery loop of several rounds leaves an empty outbox and each event once, in order", async () => {
    const ws = await settledWorkspace();
    const id = ws.workspace.id;
    const write = async (target: string) => {
      const ctx = createExecutionContext();
      await deliveringAudit(env, ctx, async () => {
        await db(env).batch([
          auditInBatch(env, { workspaceId: id, kind: SEEDED, actor: { kind: "system", id: null }, target }),
        ]);
      });
      return ctx;
    };
    const first = await write("n:0");
    await new Promise((resolve) => setTimeout(resolve, 150)); // the loop's first round has begun
    const second = await write("n:1"); // joins the running loop (another round), or starts one
    await waitOnExecutionContext(first);
    await waitOnExecutionContext(second);
    expect(await pendingCount(env, id)).toBe(0);
    expect((await chain(id, SEEDED)).map((e) => e.target)).toEqual(["n:1", "n:0"]);
  });

  it("a request's event reaches the chain once the response is out, with no call asking for it", async () => {
    const ws = await settledWorkspace();
    const ctx = createExecutionContext();
    const res = await worker.fetch!(
      new Request("https://worker.example/v1/agents", {
        method: "POST",
        headers: { Authorization: `Bearer ${ws.adminToken}`, "Content-Type": "application/json" },
        body: JSON.stringify(agentBody("delivered")),
      }),
      env,
      ctx,
    );
    expect(res.ok).toBe(true);
    await waitOnExecutionContext(ctx);
    // (Another request's delivery loop in this isolate may be the one that carries it.)
    await expect.poll(() => pendingCount(env, ws.workspace.id), { timeout: 2000 }).toBe(0);
    expect((await chain(ws.workspace.id, "agent.create")).map((e) => e.target)).toHaveLength(1);
  });

  it("an event whose workspace only the database knows is delivered too", async () => {
    const ws = await settledWorkspace();
    const ctx = createExecutionContext();
    await deliveringAudit(env, ctx, async () => {
      await db(env).batch([
        auditInBatch(
          env,
          { workspaceId: "", kind: "app.sleep", actor: { kind: "system", id: null } },
          {
            from: {
              source: sql`FROM workspaces w WHERE w.id = ${ws.workspace.id}`,
              workspaceId: sql`w.id`,
              fields: { "$.target": sql`'workspace:' || w.id` },
            },
          },
        ),
      ]);
    });
    await waitOnExecutionContext(ctx);
    expect(await pendingCount(env, ws.workspace.id)).toBe(0);
    expect((await chain(ws.workspace.id, "app.sleep")).map((e) => e.target)).toEqual([`workspace:${ws.workspace.id}`]);
  });

  it("a kind, or a detail, that the catalogue lacks does not compile", () => {
    const system = { kind: "system" as const, id: null };
    const described = (event: AuditEventInput) => event.kind;
    // @ts-expect-error: no such kind
    described({ kind: "agent.explode", workspaceId: "w", actor: system });
    // @ts-expect-error: agent.create names no `password` detail
    described({ kind: "agent.create", workspaceId: "w", actor: system, details: { password: "x" } });
    // And at run time a detail that slipped through a cast is dropped, never written.
    const row = outboxRow({
      kind: "token.create",
      workspaceId: "w",
      actor: system,
      details: { name: "ci", token: "svc_pat_secret" } as never,
    });
    expect(JSON.parse(row.event).details).toEqual({ name: "ci" });
  });
});
