import { describe, expect, it } from "vitest";
import { CreatedTokenSchema } from "../src/admin/schemas";
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
