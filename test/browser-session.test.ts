import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { auditLog } from "../durable-objects/audit-log/client";
import type { Attachment, BrowserSession } from "../durable-objects/browser-session";
import { CLOSE, LIMITS, PING_FRAME, PONG_FRAME } from "../durable-objects/protocol";
import { runEraseSteps } from "../src/admin/erase-service";
import { deliverNow } from "../src/audit/delivery";
import { deliverOutbox, pendingCount } from "../src/audit/outbox";
import { browserArea } from "../src/browser";
import { auditEvents } from "./support/audit";
import { connectExtension, eventually, sessionOf, TINY_PNG } from "./support/browser";
import { signupWorkspace } from "./support/seed";

async function connectedUser() {
  const ws = await signupWorkspace();
  const ext = await connectExtension(ws.adminToken);
  return { ws, ext, userId: ws.user.id, stub: sessionOf(ws.user.id) };
}

const auditKinds = auditEvents;

describe("BrowserSession: connection", () => {
  it("accepts the socket, reports it connected with its metadata, and audits the connect", async () => {
    const { ws, stub } = await connectedUser();
    expect(await stub.isConnected()).toBe(true);
    const info = await stub.connection();
    expect(info).toMatchObject({ userAgent: null });
    expect(info?.connectionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(Date.parse(info!.connectedAt)).toBeGreaterThan(0);

    const [event] = await auditKinds(ws.workspace.id, "browser.connect");
    expect(event).toMatchObject({
      kind: "browser.connect",
      outcome: "success",
      actor_kind: "token",
      actor_id: ws.user.id,
      target: `browser_session:${info!.connectionId}`,
      intent: "connect",
    });
    expect(Object.keys(event!.details)).toEqual(["token_id"]);
  });

  it("records the extension's user agent from computer.ready", async () => {
    const { ext, stub } = await connectedUser();
    ext.send({ type: "event", method: "computer.ready", params: { user_agent: "TestBrowser/1.0" } });
    await eventually(async () => (await stub.connection())?.userAgent === "TestBrowser/1.0");
  });

  it("replaces an older connection of the same user, closing it with a clear code and reason", async () => {
    const { ws, ext: first, stub } = await connectedUser();
    const before = await stub.connection();
    const second = await connectExtension(ws.adminToken);
    expect(await first.closed).toEqual({ code: CLOSE.replaced, reason: "replaced by a newer connection" });

    const after = await stub.connection();
    expect(after?.connectionId).not.toBe(before?.connectionId);
    const pending = stub.command("computer.url", {});
    const frame = await second.next();
    expect(frame).toMatchObject({ method: "computer.url" });
    second.succeed(frame.id!, { url: "https://example.com/", title: "Example" });
    expect(await pending).toEqual({ ok: true, result: { url: "https://example.com/", title: "Example" } });
    expect(first.backlog).toBe(0);

    const [gone] = await auditKinds(ws.workspace.id, "browser.disconnect");
    expect(gone).toMatchObject({
      target: `browser_session:${before!.connectionId}`,
      details: { cause: "replaced", code: CLOSE.replaced },
    });
  });

  it("answers the ping frame without waking the object", async () => {
    const { ext, stub } = await connectedUser();
    ext.send(PING_FRAME);
    expect(await ext.nextRaw()).toBe(PONG_FRAME);
    const autoAnswered = await runInDurableObject(stub, (_o: BrowserSession, state) => {
      const [socket] = state.getWebSockets();
      return state.getWebSocketAutoResponseTimestamp(socket!) !== null;
    });
    expect(autoAnswered).toBe(true);
  });
});

describe("BrowserSession: commands", () => {
  it("sends { id, method, params }, matches the reply by id, and resolves with the result", async () => {
    const { ext, stub } = await connectedUser();
    const a = stub.command("computer.click", { x: 10, y: 20 });
    const b = stub.command("computer.read", {});
    const fa = await ext.next();
    const fb = await ext.next();
    expect(fa).toEqual({ id: 1, method: "computer.click", params: { x: 10, y: 20 } });
    expect(fb).toEqual({ id: 2, method: "computer.read", params: {} });
    // answered out of order: matched by id
    ext.succeed(2, { text: "Hello page" });
    ext.succeed(1, { extra: "dropped" });
    expect(await b).toEqual({ ok: true, result: { text: "Hello page" } });
    expect(await a).toEqual({ ok: true, result: {} });
  });

  it("fails the command with the extension's error and message", async () => {
    const { ext, stub } = await connectedUser();
    const pending = stub.command("computer.click", { x: 1, y: 1 });
    const frame = await ext.next();
    ext.fail(frame.id!, "no such element", "nothing clickable at 1,1");
    expect(await pending).toEqual({ ok: false, error: "no such element", message: "nothing clickable at 1,1" });
  });

  it("refuses a result that does not match the method's protocol shape", async () => {
    const { ext, stub } = await connectedUser();
    const pending = stub.command("computer.screenshot", {});
    const frame = await ext.next();
    ext.succeed(frame.id!, { data: "not base64!!" });
    const outcome = await pending;
    expect(outcome).toMatchObject({ ok: false, error: "invalid result" });
  });

  it("times a command out, and answers a late reply with an error event", async () => {
    const { ext, stub } = await connectedUser();
    const started = Date.now();
    const outcome = await stub.command("computer.screenshot", {}, 300);
    expect(outcome).toMatchObject({ ok: false, error: "timeout" });
    expect(Date.now() - started).toBeLessThan(3_000);
    const frame = await ext.next();
    ext.succeed(frame.id!, { data: TINY_PNG });
    expect(await ext.next()).toMatchObject({
      type: "event",
      method: "session.error",
      params: { error: "unknown id", id: frame.id },
    });
  });

  it("fails every pending command at once when the socket closes, and audits the disconnect", async () => {
    const { ws, ext, stub } = await connectedUser();
    const pending = [
      stub.command("computer.url", {}),
      stub.command("computer.read", {}),
      stub.command("computer.screenshot", {}),
    ];
    for (let i = 0; i < pending.length; i++) await ext.next();
    const started = Date.now();
    ext.close(1001, "tab closed");
    const outcomes = await Promise.all(pending);
    expect(Date.now() - started).toBeLessThan(2_000);
    for (const o of outcomes) expect(o).toMatchObject({ ok: false, error: "disconnected" });
    expect(await stub.isConnected()).toBe(false);
    await eventually(async () => (await auditKinds(ws.workspace.id, "browser.disconnect")).length === 1);
    const [event] = await auditKinds(ws.workspace.id, "browser.disconnect");
    expect(event!.details).toMatchObject({ cause: "closed", code: 1001 });
  });

  it("fails at once when no browser is connected", async () => {
    const ws = await signupWorkspace();
    const stub = sessionOf(ws.user.id);
    expect(await stub.isConnected()).toBe(false);
    expect(await stub.connection()).toBeNull();
    expect(await stub.command("computer.url", {})).toMatchObject({ ok: false, error: "not connected" });
  });

  it("validates the method and its parameters before sending anything", async () => {
    const { ext, stub } = await connectedUser();
    expect(await stub.command("computer.teleport" as "computer.url", {})).toMatchObject({
      ok: false,
      error: "invalid argument",
    });
    expect(await stub.command("computer.click", { x: -1, y: 2 })).toMatchObject({
      ok: false,
      error: "invalid argument",
    });
    expect(await stub.command("computer.navigate", { url: "javascript:alert(1)" })).toMatchObject({
      ok: false,
      error: "invalid argument",
    });
    expect(await stub.command("computer.type", { text: "x", extra: true })).toMatchObject({
      ok: false,
      error: "invalid argument",
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(ext.backlog).toBe(0);
  });

  it(`refuses more than ${LIMITS.maxPending} commands waiting at once`, async () => {
    const { ext, stub } = await connectedUser();
    const waiting = Array.from({ length: LIMITS.maxPending }, () => stub.command("computer.url", {}));
    for (let i = 0; i < LIMITS.maxPending; i++) await ext.next();
    expect(await stub.command("computer.url", {})).toMatchObject({ ok: false, error: "busy" });
    for (let id = 1; id <= LIMITS.maxPending; id++) ext.succeed(id, { url: "about:blank", title: "" });
    for (const o of await Promise.all(waiting)) expect(o.ok).toBe(true);
  });
});

describe("BrowserSession: untrusted frames", () => {
  it("answers malformed frames with an error event and keeps working", async () => {
    const { ext, stub } = await connectedUser();
    const bad: unknown[] = [
      "not json",
      "[]",
      { type: "success" },
      { type: "success", id: "7", result: {} },
      { type: "error", id: 1 },
      { type: "event" },
      { type: "nonsense", id: 1 },
      "null",
    ];
    for (const frame of bad) {
      ext.send(frame);
      const answer = await ext.next();
      expect(answer).toMatchObject({ type: "event", method: "session.error", params: { error: "invalid frame" } });
      expect(typeof (answer.params as { message: string }).message).toBe("string");
    }
    ext.send(new Uint8Array([1, 2, 3]));
    expect(await ext.next()).toMatchObject({ params: { error: "binary frame" } });
    ext.send({ type: "event", method: "computer.ready", params: { user_agent: 42 } });
    expect(await ext.next()).toMatchObject({ params: { error: "invalid frame" } });

    const pending = stub.command("computer.url", {});
    const frame = await ext.next();
    ext.succeed(frame.id!, { url: "https://ok.test/", title: "OK" });
    expect(await pending).toMatchObject({ ok: true });
  });

  it("refuses an oversized reply and fails its command at once", async () => {
    const { ext, stub } = await connectedUser();
    const pending = stub.command("computer.read", {});
    const frame = await ext.next();
    ext.send(`{"type":"success","id":${frame.id},"result":{"text":"${"a".repeat(LIMITS.maxFrameChars)}"}}`);
    expect(await pending).toMatchObject({ ok: false, error: "frame too large" });
    expect(await ext.next()).toMatchObject({ params: { error: "frame too large", id: frame.id } });
  });

  it("does not count replies to the server's own commands against the rate bound", async () => {
    const { ext, stub } = await connectedUser();
    ext.ws.addEventListener("message", (e) => {
      const frame = JSON.parse(e.data as string) as { id?: number };
      if (typeof frame.id === "number") ext.succeed(frame.id, { url: "https://fast.test/", title: "Fast" });
    });
    for (let i = 0; i < LIMITS.maxFramesPerWindow * 2; i++) {
      expect(await stub.command("computer.url", {})).toMatchObject({ ok: true });
    }
    expect(await stub.isConnected()).toBe(true);
  });

  it("closes a socket that floods the object with frames", async () => {
    const { ext, stub } = await connectedUser();
    for (let i = 0; i <= LIMITS.maxFramesPerWindow; i++) ext.send({ type: "event", method: "noise" });
    expect(await ext.closed).toEqual({ code: CLOSE.policy, reason: "rate limit exceeded" });
    expect(await stub.isConnected()).toBe(false);
  });
});

describe("BrowserSession: hibernation", () => {
  it("keeps the connection's metadata across eviction and goes on numbering commands", async () => {
    const { ext, stub, userId, ws } = await connectedUser();
    ext.send({ type: "event", method: "computer.ready", params: { user_agent: "Hibernating/2" } });
    const first = stub.command("computer.url", {});
    const f1 = await ext.next();
    ext.succeed(f1.id!, { url: "https://a.test/", title: "A" });
    await first;
    const before = await stub.connection();

    await evictDurableObject(stub);

    const attachment = await runInDurableObject(stub, (_o: BrowserSession, state) => {
      const sockets = state.getWebSockets();
      return { count: sockets.length, attachment: sockets[0]!.deserializeAttachment() as Attachment };
    });
    expect(attachment.count).toBe(1);
    expect(attachment.attachment).toMatchObject({
      userId,
      workspaceId: ws.workspace.id,
      connectionId: before!.connectionId,
      userAgent: "Hibernating/2",
      nextId: 2,
      retired: false,
    });
    expect(await stub.isConnected()).toBe(true);

    const second = stub.command("computer.read", {});
    const f2 = await ext.next();
    expect(f2).toEqual({ id: 2, method: "computer.read", params: {} });
    ext.succeed(f2.id!, { text: "after waking" });
    expect(await second).toEqual({ ok: true, result: { text: "after waking" } });
  });
});

describe("BrowserSession: audit", () => {
  it("keeps the disconnect event in the outbox while the audit log cannot be reached, and delivers it later", async () => {
    const { ws, ext, stub } = await connectedUser();
    await deliverNow(env, ws.workspace.id);
    const unreachable = { getByName: () => ({ deliver: () => Promise.reject(new Error("AuditLog unavailable")) }) };
    await runInDurableObject(stub, (instance: BrowserSession) => {
      (instance as unknown as { env: Env }).env = { ...env, AUDIT_LOG: unreachable } as unknown as Env;
    });
    expect(await stub.disconnect("token revoked")).toBe(true);
    expect(await ext.closed).toEqual({ code: CLOSE.ended, reason: "token revoked" });
    expect(await pendingCount(env, ws.workspace.id)).toBe(1);
    const chain = await auditLog(env, ws.workspace.id).list(
      { days: 0, kind: "browser.disconnect" },
      { page: 1, pageSize: 5 },
    );
    expect(chain.total).toBe(0);

    await deliverOutbox(env);
    const [event] = await auditKinds(ws.workspace.id, "browser.disconnect");
    expect(event).toMatchObject({
      actor_id: ws.user.id,
      intent: "disconnect",
      details: { cause: "ended", code: CLOSE.ended },
    });
    expect(await pendingCount(env, ws.workspace.id)).toBe(0);
  });
});

describe("BrowserSession: erasure", () => {
  it("ends the user's session when the user is erased", async () => {
    const { ws, ext, stub } = await connectedUser();
    await runEraseSteps(env, [{ area: "browser", step: browserArea.eraseStep! }], ws.workspace.id, ws.user.id);
    expect(await ext.closed).toEqual({ code: CLOSE.ended, reason: "user erased" });
    expect(await stub.isConnected()).toBe(false);
    const [event] = await auditKinds(ws.workspace.id, "browser.disconnect");
    expect(event!.details).toMatchObject({ cause: "ended", code: CLOSE.ended });
  });
});
