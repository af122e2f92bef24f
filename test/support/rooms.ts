import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { UIMessageChunk } from "ai";
import { expect } from "vitest";
import type { ConversationRoomObject } from "../../src/conversations/room/object";
import { allMessages } from "../../src/conversations/room/store";
import type { RoomHost, RunningTurn } from "../../src/conversations/room/types";
import { ConversationSchema, TurnResponseSchema } from "../../src/conversations/schemas";
import { call, parse } from "./api";
import { usageEntries } from "./ledger";
import type { scriptedModels } from "./scripted-llm";
import { addUser, signupWorkspace } from "./seed";

/** A reply long enough to stream word by word (`wordDelayMs`) while a test acts mid-turn. */
export const REPLY = "One two three four five six seven eight nine ten eleven twelve.";
/** The header that asks `POST …/messages` for the turn's stream instead of its JSON answer. */
export const streaming = { Accept: "text/event-stream" };

/** A new conversation of the token's user, with the workspace's default agent. */
export async function conversationOf(token: string) {
  return parse(await call("POST", "/v1/api/conversations", { token, body: {} }), ConversationSchema);
}

/** `POST /v1/api/conversations/{id}/messages` with `content`. */
export const postMessage = (token: string, id: string, content: string, headers: Record<string, string> = {}) =>
  call("POST", `/v1/api/conversations/${id}/messages`, { token, body: { content }, headers });

/** A running turn as `room` holds it, with nobody following it yet. */
export function runningTurn(turnId: string, room: Pick<RoomHost, "storeEvents">): RunningTurn {
  const turn: RunningTurn = {
    turnId,
    position: 1,
    seq: 0,
    chunks: [],
    followers: new Set(),
    closed: false,
    settled: Promise.resolve(),
    stop: () => undefined,
    abandon: () => undefined,
    store: () => room.storeEvents(turn),
  };
  return turn;
}

export const delta = (text: string): UIMessageChunk => ({ type: "text-delta", id: "t", delta: text });

/** A conversation's room, to look into its storage the way only the room itself can. */
export const roomStub = (conversationId: string) => env.CONVERSATION_ROOM.getByName(conversationId);

export const inRoom = <T>(conversationId: string, look: (room: ConversationRoomObject) => T | Promise<T>) =>
  runInDurableObject(roomStub(conversationId), (room) => look(room as unknown as ConversationRoomObject));

/** The turns the room holds, oldest first, with their states. */
export const turnStates = (conversationId: string) =>
  inRoom(conversationId, (room) =>
    room.ctx.storage.sql.exec<{ id: string; state: string }>("SELECT id, state FROM turns ORDER BY position").toArray(),
  );

/**
 * A room's only turn, cut short after it said part of `REPLY`: it ended `failed`, its partial
 * reply kept and billed once. Answers that reply and the turn's states.
 */
export async function expectCutShortEnded(workspaceId: string, conversationId: string) {
  const states = await turnStates(conversationId);
  expect(states.map((t) => t.state)).toEqual(["failed"]);
  const [, partial] = await roomMessages(conversationId);
  expect(REPLY.startsWith(partial!.content)).toBe(true);
  expect(partial!.content.length).toBeGreaterThan(0);
  expect(await usageEntries(workspaceId)).toEqual([{ amount: -partial!.credits, reference: states[0]!.id }]);
  return { states, partial: partial! };
}

/** The conversation takes its next message: a new turn answers it (after a failure or a restart). */
export async function expectNextTurnRuns(
  token: string,
  conversationId: string,
  script: ReturnType<typeof scriptedModels>["script"],
) {
  script({ text: "Back again." });
  const next = await parse(await postMessage(token, conversationId, "again"), TurnResponseSchema);
  expect(next.reply.content).toBe("Back again.");
}

/** The messages the room holds, oldest first (what `GET /v1/api/conversations/{id}` lists). */
export const roomMessages = (conversationId: string) => inRoom(conversationId, (room) => allMessages(room.db));

/** A frame of the live socket (`GET …/live`). */
export type LiveFrame =
  | { type: "message"; message: { id: string; role: string; content: string } }
  | { type: "chunk"; turn_id: string; seq: number; chunk: UIMessageChunk };

/**
 * Opens a conversation's live socket with the token in `Authorization` or, as a browser sends
 * it, in the subprotocol; records its frames and its close code. Anything but 101 fails the test.
 */
export async function watchLive(conversationId: string, init: { token?: string; protocol?: string }) {
  const headers: Record<string, string> = { Upgrade: "websocket" };
  if (init.protocol) headers["Sec-WebSocket-Protocol"] = init.protocol;
  const res = await call("GET", `/v1/api/conversations/${conversationId}/live`, { token: init.token, headers });
  if (res.status !== 101) throw new Error(`live socket refused: ${res.status} ${await res.text()}`);
  const ws = res.webSocket!;
  ws.accept();
  const frames: LiveFrame[] = [];
  const seen = { closed: null as number | null };
  ws.addEventListener("message", (e) => frames.push(JSON.parse(e.data as string) as LiveFrame));
  ws.addEventListener("close", (e) => {
    seen.closed = e.code;
  });
  return { res, ws, frames, seen };
}

/** A workspace whose admin has a conversation with a member (reading and writing) added to it. */
export async function sharedConversation() {
  const ws = await signupWorkspace();
  const member = await addUser(ws.adminToken, "member", ["conversations:read", "conversations:write"]);
  const c = await conversationOf(ws.adminToken);
  const added = await call("POST", `/v1/api/conversations/${c.id}/participants`, {
    token: ws.adminToken,
    body: { user_id: member.user.id },
  });
  if (added.status >= 300) throw new Error(`adding the member failed: ${added.status}`);
  return { ws, member, c };
}
