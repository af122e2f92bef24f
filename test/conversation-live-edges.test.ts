import { describe, expect, it } from "vitest";
import { CreatedTokenSchema } from "../src/admin/schemas";
import { LIVE_RECHECK_MS } from "../src/conversations/room/live-sockets";
import { call, expectProblem, parse } from "./support/api";
import { eventually } from "./support/browser";
import { conversationOf, inRoom, postMessage, REPLY, sharedConversation, streaming, watchLive } from "./support/rooms";
import { scriptedModels } from "./support/scripted-llm";
import { signupWorkspace } from "./support/seed";

const { script } = scriptedModels();

const upgrade = { Upgrade: "websocket" };

describe("live sockets of someone who leaves", () => {
  // Spec: "pushes every new message and the running turn's events to every participant watching."
  it("an erased member's socket closes and gets no frame of the conversation the others go on with", async () => {
    const { ws, member, c } = await sharedConversation();
    const admin = await watchLive(c.id, { token: ws.adminToken });
    const erased = await watchLive(c.id, { token: member.token });
    const res = await call("POST", `/v1/admin/users/${member.user.id}/erase`, {
      token: ws.adminToken,
      body: { confirm: true },
    });
    expect(res.status).toBe(200);
    await eventually(async () => erased.seen.closed !== null);
    script({ text: "Only for those left." });
    expect((await postMessage(ws.adminToken, c.id, "still here")).status).toBe(200);
    await eventually(async () => admin.frames.filter((f) => f.type === "message").length === 2);
    expect(erased.frames).toEqual([]);
    admin.ws.close();
  });

  it("deleting the conversation closes every participant's socket", async () => {
    const { ws, member, c } = await sharedConversation();
    const viewers = [await watchLive(c.id, { token: ws.adminToken }), await watchLive(c.id, { token: member.token })];
    expect((await call("DELETE", `/v1/api/conversations/${c.id}`, { token: member.token })).status).toBe(200);
    await eventually(async () => viewers.every((v) => v.seen.closed !== null));
    expect(viewers.map((v) => v.seen.closed)).toEqual([1000, 1000]);
    // The conversation is gone: no new socket.
    await expectProblem(
      await call("GET", `/v1/api/conversations/${c.id}/live`, { token: ws.adminToken, headers: upgrade }),
      404,
    );
  });
});

describe("a viewer who joins mid-turn", () => {
  // Docs: "who joins mid-turn first gets the turn's events so far."
  it("gets the turn's events so far, then the live ones: every seq once, in order, and the whole reply", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    script({ text: REPLY, wordDelayMs: 40 });
    const stream = (await postMessage(ws.adminToken, c.id, "count", streaming)).body!.pipeThrough(
      new TextDecoderStream(),
    );
    const reader = stream.getReader();
    let seen = "";
    // A few events in, the viewer arrives.
    while ((seen.match(/^id: /gm) ?? []).length < 4) seen += (await reader.read()).value ?? "";
    const late = await watchLive(c.id, { token: ws.adminToken });
    while (!(await reader.read()).done);
    await eventually(async () => late.frames.some((f) => f.type === "message"));
    const chunks = late.frames.filter((f) => f.type === "chunk");
    expect(chunks.map((f) => f.seq)).toEqual(chunks.map((_, i) => i + 1));
    const text = chunks
      .map((f) => f.chunk)
      .flatMap((ch) => (ch.type === "text-delta" ? [ch.delta] : []))
      .join("");
    expect(text).toBe(REPLY);
    const reply = late.frames.find((f) => f.type === "message");
    expect(reply?.type === "message" && reply.message.content).toBe(REPLY);
    // The reply's message frame comes after the turn's last event.
    expect(late.frames.at(-1)?.type).toBe("message");
    late.ws.close();
  });
});

describe("a live socket's credential", () => {
  // Nothing of the conversation may reach a socket whose token was revoked, past the few seconds
  // a revocation takes to reach every request (CREDENTIAL_REUSE_MS).
  async function watchingWithIssuedToken() {
    const { ws, c } = await sharedConversation();
    const issued = await call("POST", "/v1/api/admin/tokens", {
      token: ws.adminToken,
      body: { user_id: ws.user.id, name: "watcher", scopes: ["conversations:read"] },
    });
    const token = await parse(issued, CreatedTokenSchema);
    const admin = await watchLive(c.id, { token: ws.adminToken });
    const watcher = await watchLive(c.id, { token: token.token });
    const revoke = async () =>
      expect((await call("DELETE", `/v1/api/admin/tokens/${token.id}`, { token: ws.adminToken })).status).toBe(204);
    return { ws, c, admin, watcher, revoke };
  }

  /** The sockets' credentials were last checked LIVE_RECHECK_MS ago: the next frame checks them again. */
  const dueForCheck = (conversationId: string) =>
    inRoom(conversationId, (room) => {
      for (const s of room.ctx.getWebSockets())
        s.serializeAttachment({ ...(s.deserializeAttachment() as object), checkedAt: Date.now() - LIVE_RECHECK_MS });
    });

  const checkedAt = (conversationId: string) =>
    inRoom(conversationId, (room) =>
      room.ctx.getWebSockets().map((s) => (s.deserializeAttachment() as { checkedAt: number }).checkedAt),
    );

  it("a revoked token's socket closes (1008) before the next turn's first frame; the others go on", async () => {
    const { ws, c, admin, watcher, revoke } = await watchingWithIssuedToken();
    await revoke();
    await dueForCheck(c.id);
    script({ text: "Not for the revoked." });
    expect((await postMessage(ws.adminToken, c.id, "hello")).status).toBe(200);
    await eventually(async () => admin.frames.filter((f) => f.type === "message").length === 2);
    expect(watcher.seen.closed).toBe(1008);
    expect(watcher.frames).toEqual([]);
    expect(await checkedAt(c.id)).toHaveLength(1);
    admin.ws.close();
  });

  it("a valid token's socket stays open across its checks, each good for LIVE_RECHECK_MS", async () => {
    const { ws, c, admin, watcher } = await watchingWithIssuedToken();
    await dueForCheck(c.id);
    const before = Date.now();
    script({ text: "For everyone." });
    expect((await postMessage(ws.adminToken, c.id, "hello")).status).toBe(200);
    await eventually(async () => watcher.frames.filter((f) => f.type === "message").length === 2);
    expect(watcher.seen.closed).toBeNull();
    for (const at of await checkedAt(c.id)) expect(at).toBeGreaterThanOrEqual(before);
    admin.ws.close();
    watcher.ws.close();
  });

  it("a token revoked while a turn streams: its socket closes at the next check, the turn goes on for the others", async () => {
    const { ws, c, admin, watcher, revoke } = await watchingWithIssuedToken();
    script({ text: "one two three four five six seven eight", wordDelayMs: 40 });
    const posted = postMessage(ws.adminToken, c.id, "slowly");
    await eventually(async () => watcher.frames.some((f) => f.type === "chunk" && f.chunk.type === "text-delta"));
    await revoke();
    await dueForCheck(c.id);
    await eventually(async () => watcher.seen.closed !== null);
    expect(watcher.seen.closed).toBe(1008);
    const seenByWatcher = watcher.frames.length;
    expect((await posted).status).toBe(200);
    await eventually(async () => admin.frames.filter((f) => f.type === "message").length === 2);
    expect(watcher.frames).toHaveLength(seenByWatcher);
    admin.ws.close();
  });
});

describe("the svc-pat subprotocol", () => {
  const viaProtocol = (id: string, token: string) =>
    call("GET", `/v1/api/conversations/${id}/live`, {
      headers: { ...upgrade, "Sec-WebSocket-Protocol": `svc-pat.${token}` },
    });

  it("refuses a revoked token (401) and another workspace's token (404), and upgrades with a valid one", async () => {
    const { ws, c } = await sharedConversation();
    const issued = await call("POST", "/v1/api/admin/tokens", {
      token: ws.adminToken,
      body: { user_id: ws.user.id, name: "soon revoked", scopes: ["conversations:read"] },
    });
    const token = await parse(issued, CreatedTokenSchema);
    const ok = await viaProtocol(c.id, token.token);
    expect(ok.status).toBe(101);
    ok.webSocket!.accept();
    ok.webSocket!.close();
    expect((await call("DELETE", `/v1/api/admin/tokens/${token.id}`, { token: ws.adminToken })).status).toBe(204);
    await expectProblem(await viaProtocol(c.id, token.token), 401);
    const stranger = await signupWorkspace();
    await expectProblem(await viaProtocol(c.id, stranger.adminToken), 404);
  });
});

describe("a socket that goes away", () => {
  // RFC 6455 §7.4.1: 1005, 1006 and 1015 report a close and "MUST NOT be set as a status code in a Close control frame".
  it("closes without an error when the client vanished (1006) or closed without a code (1005)", async () => {
    const ws = await signupWorkspace();
    const c = await conversationOf(ws.adminToken);
    const outcomes = await inRoom(c.id, async (room) => {
      const out: string[] = [];
      for (const code of [1005, 1006, 1015, 4000]) {
        const [, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
        server.accept();
        out.push(
          await room.webSocketClose(server, code).then(
            () => "closed",
            (e: unknown) => String(e),
          ),
        );
      }
      return out;
    });
    expect(outcomes).toEqual(["closed", "closed", "closed", "closed"]);
  });
});
