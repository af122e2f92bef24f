import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { UIMessageChunk } from "ai";
import type { ConversationRoomObject } from "../../src/conversations/room/object";
import { allMessages } from "../../src/conversations/room/store";
import type { RunningTurn } from "../../src/conversations/room/types";
import { ConversationSchema } from "../../src/conversations/schemas";
import { call, parse } from "./api";

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

/** A running turn as the room holds it, with nobody following it yet. */
export const runningTurn = (turnId: string): RunningTurn => ({
  turnId,
  position: 1,
  seq: 0,
  chunks: [],
  followers: new Set(),
  closed: false,
  settled: Promise.resolve(),
  stop: () => undefined,
  abandon: () => undefined,
});

export const delta = (text: string): UIMessageChunk => ({ type: "text-delta", id: "t", delta: text });

/** A conversation's room, to look into its storage the way only the room itself can. */
export const roomStub = (conversationId: string) => env.CONVERSATION_ROOM.getByName(conversationId);

export const inRoom = <T>(conversationId: string, look: (room: ConversationRoomObject) => T | Promise<T>) =>
  runInDurableObject(roomStub(conversationId), (room) => look(room as unknown as ConversationRoomObject));

/** The messages the room holds, oldest first (what `GET /v1/api/conversations/{id}` lists). */
export const roomMessages = (conversationId: string) => inRoom(conversationId, (room) => allMessages(room.db));
