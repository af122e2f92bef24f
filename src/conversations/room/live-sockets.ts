import { type HeldCredential, stillLive } from "../../auth/held";
import type { LiveFrame, LiveViewer } from "./live";
import { liveFrame } from "./live";
import { eventsAfter, type RoomDb } from "./store";
import type { RunningTurn } from "./types";

/** Accepts a participant's hibernating live socket; a viewer who arrives mid-turn sees the turn so far. */
export function acceptLiveSocket(
  ctx: DurableObjectState,
  d: RoomDb,
  running: RunningTurn | null,
  viewer: LiveViewer,
): Response {
  const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
  ctx.acceptWebSocket(server, [viewer.userId]);
  server.serializeAttachment({ credential: viewer.credential, checkedAt: Date.now() } satisfies Held);
  if (running)
    for (const e of eventsAfter(d, running.turnId, 0))
      server.send(JSON.stringify(liveFrame.chunk(running.turnId, e.seq, e.chunk)));
  return new Response(null, { status: 101, webSocket: client });
}

/** Closes a user's live sockets (the user left the conversation): frames go to participants only. */
export function closeSocketsOf(ctx: DurableObjectState, userId: string, reason: string): void {
  for (const ws of ctx.getWebSockets(userId)) ws.close(1000, reason);
}

/** Sends a frame to the live sockets (the frame is made only when someone watches). */
export function broadcastFrame(sockets: readonly WebSocket[], frame: LiveFrame | (() => LiveFrame)): void {
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

/**
 * How long a live socket's credential is taken as still valid after it was last checked: as
 * long as a request's credential is reused (`CREDENTIAL_REUSE_MS`), so a revoked token or an
 * erased user stops receiving frames as soon as they stop being able to call the API.
 */
export const LIVE_RECHECK_MS = 5_000;

/** What a live socket keeps across hibernation: the credential it was opened with, and when it was last found valid. */
type Held = { credential: HeldCredential; checkedAt: number };

const heldBy = (ws: WebSocket): Held | null => (ws.deserializeAttachment() as Held | null) ?? null;

/** Of `sockets`, those whose credential was last checked `LIVE_RECHECK_MS` ago or more (or never: opened before this was kept). */
export function staleLiveSockets(sockets: readonly WebSocket[], now: number): WebSocket[] {
  return sockets.filter((ws) => {
    const held = heldBy(ws);
    return !held || now - held.checkedAt >= LIVE_RECHECK_MS;
  });
}

/**
 * Checks the credentials of `sockets` again (one D1 round trip): a socket whose credential was
 * revoked, has expired or whose user was erased closes with 1008; the others are good for
 * another `LIVE_RECHECK_MS`.
 */
export async function recheckLiveSockets(env: Env, sockets: readonly WebSocket[], now = Date.now()): Promise<void> {
  const held = sockets.map(heldBy);
  const known = held.flatMap((h) => (h ? [h.credential] : []));
  const live = await stillLive(env, known, now);
  let i = 0;
  sockets.forEach((ws, n) => {
    const h = held[n];
    const ok = h ? live[i++] : false;
    try {
      if (ok) ws.serializeAttachment({ ...h!, checkedAt: now } satisfies Held);
      else ws.close(1008, "the credential is no longer valid");
    } catch {
      // A socket closing meanwhile.
    }
  });
}
