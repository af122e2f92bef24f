import { DurableObject } from "cloudflare:workers";
import type { UIMessageChunk } from "ai";
import { drizzle } from "drizzle-orm/durable-sqlite";
import { migrate } from "drizzle-orm/durable-sqlite/migrator";
import { deliveringAudit } from "../../audit/delivery";
import { logError } from "../../platform/log";
import type { ToolProvider } from "../../platform/turn-tools";
import type { Message } from "../schemas";
import type { Decision, DecisionAnswer } from "./approval-decisions";
import type { GivenReason } from "./approval-erasure";
import { followTurn } from "./follow";
import { importFromD1, rememberConversation } from "./import";
import { LIVE_PING, LIVE_PONG, LIVE_VIEWER_HEADER, type LiveFrame, liveFrame, liveViewerSchema } from "./live";
import { acceptLiveSocket, broadcastFrame, closeSocketsOf, recheckLiveSockets, staleLiveSockets } from "./live-sockets";
import migrations from "./migrations/migrations.js";
import type { TurnState } from "./schema";
import * as schema from "./schema";
import { SSE_DONE, type StreamPosition, sseEvent } from "./sse";
import {
  allMessages,
  appendEvents,
  lastSeq,
  meta,
  pruneEvents,
  type RoomDb,
  runningTurns,
  setTurnState,
  toMessage,
  turnById,
} from "./store";
import type { Room, RunningTurn, TurnAnswer, TurnInput } from "./types";

/**
 * The turn's code (turn.ts, intake.ts, resumption.ts, approval-*.ts; the AI SDK with them)
 * loads with a room's first use of it, not with the Worker that exports the class: requests
 * that never reach a room do not pay for evaluating it at startup.
 */
const turnCode = {
  intake: () => import("./intake"),
  resume: () => import("./resumption"),
  erasure: () => import("./approval-erasure"),
  turn: () => import("./turn"),
};

/** Heartbeat while a turn runs: the alarm keeps the room from being evicted, and finds turns a restart cut short. */
export const KEEP_ALIVE_MS = 30_000;

/**
 * How long a turn nobody reads holds its events before it stores them (its end stores them
 * sooner): each store is a commit of the room's storage, so a short turn makes one, with its
 * end, instead of one per read of the model's answer. A restart loses at most this much of a
 * reply nobody was reading.
 */
export const UNREAD_EVENTS_MS = 1_000;

/**
 * One per conversation: the single owner of its messages and turns. A turn runs here, not in
 * the request that asked for it, so it ends, is stored and billed once whether or not anyone
 * still reads it; its stream events are numbered and kept, so a client that lost the stream
 * resumes where it left off. The areas' tools come from the Worker's area list (`providers`).
 */
export abstract class ConversationRoomObject extends DurableObject<Env> implements Room {
  protected abstract readonly providers: readonly ToolProvider[];
  // The running turn (turn.ts) uses the bindings and the storage too.
  declare readonly env: Env;
  declare readonly ctx: DurableObjectState<Record<never, never>>;
  readonly db: RoomDb;
  /** The turn running now, in memory: its stop switch, its sequence and who follows it. */
  running: RunningTurn | null = null;
  private identity: { conversationId: string; workspaceId: string } | null = null;
  private importing: Promise<void> | null = null;
  /** Turns a restart cut short were looked for since this instance started. */
  recovered = false;
  /** The search for cut-short turns under way, if one is. */
  recovering: Promise<void> | null = null;
  /** When the alarm this instance set is due (null: none set, or it has fired). */
  private alarmAt: number | null = null;
  /** The check of the live sockets' credentials under way, if one is. */
  private liveCheck: Promise<void> | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.db = drizzle(ctx.storage, { schema });
    void ctx.blockConcurrencyWhile(() => migrate(this.db, migrations));
  }

  /**
   * Starts a turn, or answers an idempotent repeat of one: the same key and content within
   * 24 h get the first turn's stream (from its start) or its stored reply, and bill nothing.
   */
  async startTurn(input: TurnInput): Promise<TurnAnswer> {
    await this.ready(input.conversationId, input.workspace.id, input.nothingToImport);
    // No frame of the new turn reaches a socket whose credential was revoked meanwhile.
    await this.recheckLive();
    const { startTurn } = await turnCode.intake();
    return startTurn(this, input);
  }

  /**
   * Decisions on the approvals a waiting turn asked for (one from the API, every answered one of
   * an AI SDK message). Once none of its approvals is pending, the turn resumes here, as its
   * next stream segment; `stream` answers that segment from its `start`.
   */
  async decide(
    conversationId: string,
    workspaceId: string,
    decisions: Decision[],
    stream: boolean,
  ): Promise<{ answers: DecisionAnswer[]; stream?: ReadableStream<Uint8Array> }> {
    await this.ready(conversationId, workspaceId);
    const { decideInRoom } = await turnCode.resume();
    return decideInRoom(this, conversationId, workspaceId, decisions, stream);
  }

  /**
   * The waiting turn goes on if none of its approvals is pending any more (they expired when
   * its requester was erased): the calls count as denied. Answers once that segment has ended.
   */
  async resumeWaiting(conversationId: string, workspaceId: string): Promise<void> {
    await this.ready(conversationId, workspaceId);
    const { resumeWaiting } = await turnCode.resume();
    await resumeWaiting(this);
  }

  /** Erasure: the reasons an erased member gave for their decisions go from the stored replies. */
  async forgetReasons(conversationId: string, workspaceId: string, given: GivenReason[]): Promise<void> {
    await this.ready(conversationId, workspaceId);
    const { forgetReasons } = await turnCode.erasure();
    forgetReasons(this.db, given);
  }

  /**
   * The running turn's stream from its start, or (with a position) only the events after it,
   * also of a turn that has ended; null when there is nothing to send (no turn runs, or the
   * position is the end of an ended turn, or its events are gone).
   */
  async stream(conversationId: string, workspaceId: string, after: StreamPosition | null) {
    await this.ready(conversationId, workspaceId);
    const turn = after ? turnById(this.db, after.turnId) : this.running && turnById(this.db, this.running.turnId);
    if (!turn) return null;
    const live = this.running?.turnId === turn.id;
    // A position past the running turn's last event names none the room sent: nothing after it is known.
    if (live ? (after?.seq ?? 0) > this.running!.seq : lastSeq(this.db, turn.id) <= (after?.seq ?? 0)) return null;
    return followTurn(this.db, turn.id, after?.seq ?? 0, this.running);
  }

  /** Stops the running turn: its model call is aborted, its partial reply kept and billed. */
  async stop(
    conversationId: string,
    workspaceId: string,
  ): Promise<{ turn_id: string | null; state: TurnState | "idle" }> {
    await this.ready(conversationId, workspaceId);
    const running = this.running;
    if (!running) return { turn_id: null, state: "idle" };
    running.stop();
    await running.settled;
    return { turn_id: running.turnId, state: turnById(this.db, running.turnId)?.state ?? "stopped" };
  }

  /** The messages, oldest first. */
  async messages(conversationId: string, workspaceId: string): Promise<Message[]> {
    await this.ready(conversationId, workspaceId);
    return allMessages(this.db).map((m) => toMessage(conversationId, m));
  }

  /** Deletes everything the room holds (the conversation was deleted, or nobody is left in it). */
  async destroy(): Promise<void> {
    const running = this.running;
    this.running = null;
    running?.abandon();
    for (const ws of this.ctx.getWebSockets()) ws.close(1000, "conversation deleted");
    // A copy from D1 under way would write into the emptied room: it ends first.
    await this.importing?.catch(() => undefined);
    this.alarmAt = null;
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.identity = null;
    this.importing = null;
    await migrate(this.db, migrations);
  }

  /** Erasure: the user is no participant any more; their live sockets close. */
  async closeLiveOf(userId: string): Promise<void> {
    closeSocketsOf(this.ctx, userId, "no longer a participant");
  }

  /**
   * A participant's live socket (hibernating): every new message and the running turn's events.
   * The Worker has checked the caller; it names the conversation in the request's header.
   */
  override async fetch(request: Request): Promise<Response> {
    const viewer = liveViewerSchema().parse(JSON.parse(request.headers.get(LIVE_VIEWER_HEADER) ?? "null"));
    await this.ready(viewer.conversationId, viewer.workspaceId);
    // The new socket reads the running turn's stored events: none may wait unstored.
    this.running?.store();
    return acceptLiveSocket(this.ctx, this.db, this.running, viewer);
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    if (message === LIVE_PING) ws.send(LIVE_PONG);
  }

  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    // 1005 (no code), 1006 (the client vanished) and 1015 only report a close: none may be sent back.
    ws.close(code === 1005 || code === 1006 || code === 1015 ? 1000 : code, "closed");
  }

  /**
   * Keep-alive while a turn runs; after a restart, ends a turn that was cut short; then drops
   * the stream events past their 24 hours.
   */
  override async alarm(): Promise<void> {
    this.alarmAt = null;
    if (this.running) {
      await this.keepAlive();
      return;
    }
    // A restarted room's alarm comes before any request has named its conversation.
    if (this.knownFromStorage()) await this.recoverInterrupted();
    const next = pruneEvents(this.db, Date.now());
    // Wake again when the oldest kept events expire.
    if (next !== null) await this.setAlarm(next);
  }

  /**
   * Turns stored as running that no code runs any more (the room restarted) end as `failed`,
   * billed for what they said. One search at a time: a turn stays stored as running until its
   * D1 batch is done, and a second search meanwhile (the alarm's, an intake's) would end it again.
   */
  recoverInterrupted(): Promise<void> {
    this.recovered = true;
    this.recovering ??= this.endInterrupted().finally(() => {
      this.recovering = null;
    });
    return this.recovering;
  }

  private async endInterrupted(): Promise<void> {
    const orphans = runningTurns(this.db).filter((t) => t.id !== this.running?.turnId);
    if (!orphans.length) return;
    const { settleInterrupted } = await turnCode.turn();
    for (const turn of orphans) {
      await settleInterrupted(this, turn).catch((e) => logError("room: ending an interrupted turn failed", e));
    }
  }

  // Called by the running turn.

  /**
   * Numbers a stream event. While someone reads the turn, the events of one task (a read of the
   * model's answer brings several) are stored in one statement once it is done, and only then
   * sent to the turn's followers and the live sockets: nothing leaves the room unstored. While
   * nobody does, they wait up to `UNREAD_EVENTS_MS` (the turn's end stores them with its reply,
   * in one commit); a reader who comes meanwhile has them stored first (`RunningTurn.store`).
   */
  emit(running: RunningTurn, chunk: UIMessageChunk): void {
    const seq = ++running.seq;
    running.chunks.push(chunk);
    running.unstored ??= [];
    const unstored = running.unstored;
    unstored.push({ seq, json: JSON.stringify(chunk), chunk });
    if (unstored.length === 1)
      setTimeout(() => this.storeEvents(running), this.watched(running) ? 0 : UNREAD_EVENTS_MS);
  }

  watched(running: RunningTurn): boolean {
    return running.followers.size > 0 || this.ctx.getWebSockets().length > 0;
  }

  /**
   * Stores the turn's unstored events, then sends them (nothing once the conversation is
   * deleted). The first events stored while it runs mark it `streaming`: the model answers.
   */
  storeEvents(running: RunningTurn): void {
    const events = running.unstored;
    if (!events?.length) return;
    running.unstored = [];
    if (this.running !== running) return;
    appendEvents(this.ctx.storage.sql, running.turnId, events);
    if (!running.streamingStored && !running.closed) {
      running.streamingStored = true;
      setTurnState(this.db, running.turnId, "streaming");
    }
    for (const { seq, json, chunk } of events) {
      if (running.followers.size) {
        const bytes = sseEvent(running.turnId, seq, json);
        for (const f of running.followers) {
          try {
            f.enqueue(bytes);
          } catch {
            running.followers.delete(f);
          }
        }
      }
      this.broadcast(liveFrame.chunk(running.turnId, seq, chunk));
    }
  }

  /** Ends the followers' streams; the turn is over. */
  closeFollowers(running: RunningTurn): void {
    this.storeEvents(running);
    running.closed = true;
    for (const f of running.followers) {
      try {
        f.enqueue(SSE_DONE);
        f.close();
      } catch {
        // The reader has gone.
      }
    }
    running.followers.clear();
  }

  finished(running: RunningTurn): void {
    if (this.running === running) this.running = null;
  }

  get conversationId(): string {
    return this.identity!.conversationId;
  }

  get toolProviders(): readonly ToolProvider[] {
    return this.providers;
  }

  /**
   * The heartbeat: an alarm due within `KEEP_ALIVE_MS`. One already due that soon is kept, so
   * turns one after another do not each move it (each move is a write and a commit).
   */
  keepAlive(): Promise<void> | undefined {
    const now = Date.now();
    if (this.alarmAt !== null && this.alarmAt > now && this.alarmAt <= now + KEEP_ALIVE_MS) return undefined;
    return this.setAlarm(now + KEEP_ALIVE_MS);
  }

  private setAlarm(at: number): Promise<void> {
    this.alarmAt = at;
    return this.ctx.storage.setAlarm(at);
  }

  /** Runs `work` with delivery of the audit events it writes, as every entry point does. */
  delivering<T>(work: () => Promise<T>): Promise<T> {
    return deliveringAudit(this.env, this.ctx, work);
  }

  /**
   * Sends a frame to every participant watching on the live socket (made only when someone
   * watches). Sockets whose credential is due a check get one meanwhile (see `recheckLive`).
   */
  broadcast(frame: LiveFrame | (() => LiveFrame)): void {
    const sockets = this.ctx.getWebSockets();
    if (!sockets.length) return;
    const check = this.recheckLive(sockets);
    if (check) this.ctx.waitUntil(check);
    broadcastFrame(sockets, frame);
  }

  /**
   * Checks again the credentials of the live sockets not checked within `LIVE_RECHECK_MS`
   * (one check at a time); those no longer valid close. Undefined when none is due.
   */
  private recheckLive(sockets = this.ctx.getWebSockets()): Promise<void> | undefined {
    if (this.liveCheck) return this.liveCheck;
    const due = staleLiveSockets(sockets, Date.now());
    if (!due.length) return undefined;
    this.liveCheck = recheckLiveSockets(this.env, due)
      .catch((e) => logError("room: checking the live sockets' credentials failed", e))
      .finally(() => {
        this.liveCheck = null;
      });
    return this.liveCheck;
  }

  /** Knows its conversation from its storage, if it has stored any (a restarted room's alarm needs it). */
  private knownFromStorage(): boolean {
    if (this.identity) return true;
    const conversationId = meta(this.db, "conversation_id");
    const workspaceId = meta(this.db, "workspace_id");
    if (!conversationId || !workspaceId) return false;
    this.identity = { conversationId, workspaceId };
    return true;
  }

  /**
   * Knows its conversation; on first use copies the messages it had in D1 before rooms held them
   * (unless the caller knows there are none).
   */
  private async ready(conversationId: string, workspaceId: string, nothingToImport = false): Promise<void> {
    if (this.identity) return;
    if (!meta(this.db, "conversation_id") && nothingToImport && !this.importing)
      this.ctx.storage.transactionSync(() => rememberConversation(this.db, conversationId, workspaceId));
    if (meta(this.db, "conversation_id")) {
      this.identity = { conversationId, workspaceId };
      return;
    }
    // A copy that failed (D1 unavailable) is tried again by the next request.
    this.importing ??= importFromD1(this.env, this.ctx.storage, this.db, conversationId, workspaceId).catch((e) => {
      this.importing = null;
      throw e;
    });
    await this.importing;
    this.identity = { conversationId, workspaceId };
  }
}
