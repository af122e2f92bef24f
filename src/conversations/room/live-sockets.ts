import type { LiveFrame } from "./live";
import { liveFrame } from "./live";
import { eventsAfter, type RoomDb } from "./store";
import type { RunningTurn } from "./types";

/** Accepts a participant's hibernating live socket; a viewer who arrives mid-turn sees the turn so far. */
export function acceptLiveSocket(
  ctx: DurableObjectState,
  d: RoomDb,
  running: RunningTurn | null,
  userId: string,
): Response {
  const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
  ctx.acceptWebSocket(server, [userId]);
  if (running)
    for (const e of eventsAfter(d, running.turnId, 0))
      server.send(JSON.stringify(liveFrame.chunk(running.turnId, e.seq, e.chunk)));
  return new Response(null, { status: 101, webSocket: client });
}

/** Closes a user's live sockets (the user left the conversation): frames go to participants only. */
export function closeSocketsOf(ctx: DurableObjectState, userId: string, reason: string): void {
  for (const ws of ctx.getWebSockets(userId)) ws.close(1000, reason);
}

/** Sends a frame to every live socket (the frame is made only when someone watches). */
export function broadcastFrame(ctx: DurableObjectState, frame: LiveFrame | (() => LiveFrame)): void {
  const sockets = ctx.getWebSockets();
  if (!sockets.length) return;
  const text = JSON.stringify(typeof frame === "function" ? frame() : frame);
  for (const ws of sockets) {
    try {
      ws.send(text);
    } catch {
      // A socket closing meanwhile.
    }
  }
}
