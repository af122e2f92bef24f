import type { UIMessageChunk } from "ai";
import type { Message } from "../schemas";

/**
 * The frames of `GET /v1/api/conversations/{id}/live`: every stored message, and each event of
 * the running turn (the same chunks as its UI message stream, with their sequence numbers).
 */
export type LiveFrame =
  | { type: "message"; message: Message }
  | { type: "chunk"; turn_id: string; seq: number; chunk: UIMessageChunk };

export const liveFrame = {
  message: (message: Message): LiveFrame => ({ type: "message", message }),
  chunk: (turnId: string, seq: number, chunk: UIMessageChunk): LiveFrame => ({
    type: "chunk",
    turn_id: turnId,
    seq,
    chunk,
  }),
};
