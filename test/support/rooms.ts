import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { ConversationRoomObject } from "../../src/conversations/room/object";
import { allMessages } from "../../src/conversations/room/store";

/** A conversation's room, to look into its storage the way only the room itself can. */
export const roomStub = (conversationId: string) => env.CONVERSATION_ROOM.getByName(conversationId);

export const inRoom = <T>(conversationId: string, look: (room: ConversationRoomObject) => T | Promise<T>) =>
  runInDurableObject(roomStub(conversationId), (room) => look(room as unknown as ConversationRoomObject));

/** The messages the room holds, oldest first (what `GET /v1/api/conversations/{id}` lists). */
export const roomMessages = (conversationId: string) => inRoom(conversationId, (room) => allMessages(room.db));
