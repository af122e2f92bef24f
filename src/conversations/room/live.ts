import type { UIMessageChunk } from "ai";
import { z } from "zod";
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

/**
 * Who opens a live socket, as the Worker tells the room once it has checked the caller. Built
 * per socket: the room's module loads with the Worker, and a schema built there would cost
 * every isolate's startup.
 */
export const liveViewerSchema = () =>
  z.object({
    conversationId: z.string(),
    workspaceId: z.string(),
    userId: z.string(),
    /** The credential the socket was opened with: re-checked while it stays open (see `recheckLiveSockets`). */
    credential: z.object({ kind: z.enum(["pat", "oauth", "session"]), id: z.string() }),
  });
export type LiveViewer = z.infer<ReturnType<typeof liveViewerSchema>>;
export const LIVE_VIEWER_HEADER = "x-live-viewer";

/** Liveness: a client's `ping` text frame is answered `pong`. */
export const LIVE_PING = "ping";
export const LIVE_PONG = "pong";
