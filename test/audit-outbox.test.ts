import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { parkEvent } from "../durable-objects/audit-log/record";
import { deliverOutbox, parkedCount } from "../src/audit/outbox";
import worker from "../src/index";
import { call } from "./support/api";
import { callWith } from "./support/app";
import { auditEvents } from "./support/audit";
import { signupWorkspace } from "./support/seed";

/** An AuditLog namespace whose object cannot be reached (failure injection). */
const unreachableAuditLog = {
  getByName: () => ({
    append: () => Promise.reject(new Error("AuditLog unavailable")),
  }),
};

describe("audit outbox", () => {
  it("parks the event of a committed change when the append fails, and the scheduled handler delivers it", async () => {
    const ws = await signupWorkspace();
    const res = await callWith({ AUDIT_LOG: unreachableAuditLog }, "POST", "/v1/api/admin/tokens", {
      token: ws.adminToken,
      body: { name: "during outage", scopes: ["agents:read"] },
    });
    expect(res.status).toBe(201);
    const created = (await res.json()) as { id: string };
    expect(await parkedCount(env, ws.workspace.id)).toBe(1);
    expect(await auditEvents(ws.workspace.id, "token.create")).toHaveLength(0);
    const parkedAt = Date.now();

    const ctx = createExecutionContext();
    await worker.scheduled!(createScheduledController({ cron: "* * * * *" }), env, ctx);
    await waitOnExecutionContext(ctx);

    expect(await parkedCount(env, ws.workspace.id)).toBe(0);
    const [event] = await auditEvents(ws.workspace.id, "token.create");
    expect(event).toMatchObject({
      target: `token:${created.id}`,
      actor_id: ws.user.id,
      details: { name: "during outage" },
    });
    expect(Date.parse(event!.occurred_at)).toBeLessThanOrEqual(parkedAt);
    const verify = (await (await call("GET", "/v1/admin/audit/verify", { token: ws.adminToken })).json()) as {
      ok: boolean;
    };
    expect(verify.ok).toBe(true);
  });

  it("keeps parked events, counting attempts, while delivery keeps failing", async () => {
    const ws = await signupWorkspace();
    await callWith({ AUDIT_LOG: unreachableAuditLog }, "POST", "/v1/api/admin/tokens", {
      token: ws.adminToken,
      body: { name: "x", scopes: ["agents:read"] },
    });
    await deliverOutbox({ ...env, AUDIT_LOG: unreachableAuditLog } as unknown as Env);
    const row = await env.DB.prepare("SELECT attempts, last_error FROM audit_outbox WHERE workspace_id = ?")
      .bind(ws.workspace.id)
      .first<{ attempts: number; last_error: string }>();
    expect(row).toMatchObject({ attempts: 1 });
    expect(row?.last_error).toContain("AuditLog unavailable");
    expect(await deliverOutbox(env)).toBeGreaterThanOrEqual(1);
    expect(await parkedCount(env, ws.workspace.id)).toBe(0);
  });

  it("delivers a backlog of more than 100 events of one workspace exactly once, and counts failed attempts on all of them", async () => {
    const ws = await signupWorkspace();
    const occurredAt = new Date().toISOString();
    for (let i = 0; i < 150; i++) {
      await parkEvent(
        env,
        ws.workspace.id,
        {
          kind: "backlog.event",
          outcome: "success",
          actorKind: "system",
          actorId: null,
          agentId: null,
          conversationId: null,
          target: `n:${i}`,
          intent: "test",
          subjectUserId: null,
          details: {},
          occurredAt,
        },
        new Error("outage"),
      );
    }
    await deliverOutbox({ ...env, AUDIT_LOG: unreachableAuditLog } as unknown as Env);
    const attempts = await env.DB.prepare("SELECT DISTINCT attempts FROM audit_outbox WHERE workspace_id = ?")
      .bind(ws.workspace.id)
      .all<{ attempts: number }>();
    expect(attempts.results).toEqual([{ attempts: 1 }]);

    await deliverOutbox(env);
    await deliverOutbox(env);
    expect(await parkedCount(env, ws.workspace.id)).toBe(0);
    const events = await auditEvents(ws.workspace.id, "backlog.event");
    expect(events).toHaveLength(150);
    expect(new Set(events.map((e) => e.target)).size).toBe(150);
  });
});
