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

/** The header in which the Worker names the live socket's viewer to the room (see live-viewer.ts). */
export const LIVE_VIEWER_HEADER = "x-live-viewer";

/** Liveness: a client's `ping` text frame is answered `pong`. */
export const LIVE_PING = "ping";
export const LIVE_PONG = "pong";
