import { DurableObject } from "cloudflare:workers";
import { hash } from "node:crypto";
import type { UIMessageChunk } from "ai";
import { drizzle } from "drizzle-orm/durable-sqlite";
import { migrate } from "drizzle-orm/durable-sqlite/migrator";
import { deliveringAudit } from "../../audit/delivery";
import { nowIso } from "../../platform/env";
import { newId } from "../../platform/ids";
import { logError } from "../../platform/log";
import type { ToolProvider } from "../../platform/turn-tools";
import type { Message } from "../schemas";
import type { Decision, DecisionAnswer } from "./approval-decisions";
import type { GivenReason } from "./approval-erasure";
import { claimNewMessage, claimRegeneration } from "./claims";
import { followTurn } from "./follow";
import { importFromD1 } from "./import";
import { LIVE_PING, LIVE_PONG, LIVE_VIEWER_HEADER, type LiveFrame, liveFrame, liveViewerSchema } from "./live";
import migrations from "./migrations/migrations.js";
import type { TurnContextRow, TurnState } from "./schema";
import * as schema from "./schema";
import { SSE_DONE, type StreamPosition, sseEvent } from "./sse";
import {
  allMessages,
  appendEvents,
  eventsAfter,
  insertTurn,
  KEPT_TURNS,
  lastSeq,
  messageById,
  meta,
  pruneEvents,
  pruneOlderTurns,
  type RoomDb,
  releaseStaleKey,
  runningTurns,
  toMessage,
  turnById,
  turnByKey,
} from "./store";
import type { RoomHost, RunningTurn, TurnAnswer, TurnInput } from "./types";

/**
 * The turn's code (approval-*.ts and turn.ts, the AI SDK with them) loads with a room's first
 * use of it, not with the Worker that exports the class: requests that never reach a room do
 * not pay for evaluating it at startup.
 */
const turnCode = () => Promise.all([import("./approval-resume"), import("./turn")]);

/** Heartbeat while a turn runs: the alarm keeps the room from being evicted, and finds turns a restart cut short. */
export const KEEP_ALIVE_MS = 30_000;

/**
 * One per conversation: the single owner of its messages and turns. A turn runs here, not in
 * the request that asked for it, so it ends, is stored and billed once whether or not anyone
 * still reads it; its stream events are numbered and kept, so a client that lost the stream
 * resumes where it left off. The areas' tools come from the Worker's area list (`providers`).
 */
export abstract class ConversationRoomObject extends DurableObject<Env> implements RoomHost {
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
  private recovered = false;

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
    await this.ready(input.conversationId, input.workspace.id);
    const [{ awaitingTurn }, { runInRoom }] = await turnCode();
    // Only a restart leaves turns that no code runs: once per instance (the alarm looks too).
    if (!this.recovered) await this.recoverInterrupted();
    // From here to the claim nothing awaits: of two requests, one starts the turn and the
    // other sees it (as a repeat of its key, or as the turn in progress).
    const now = Date.now();
    const requestHash = input.idempotencyKey ? requestDigest(input) : null;
    if (input.idempotencyKey) {
      releaseStaleKey(this.db, input.idempotencyKey, now);
      const earlier = turnByKey(this.db, input.idempotencyKey, now);
      if (earlier)
        return earlier.requestHash === requestHash ? this.answerFor(earlier.id, input.stream) : { kind: "key_reused" };
    }
    if (!input.hasCredits) return { kind: "no_credits" };
    if (this.running) return { kind: "busy" };
    const waiting = awaitingTurn(this.db);
    if (waiting) {
      const expiresAt = waiting.context.approvalExpiresAt;
      if (!expiresAt || Date.parse(expiresAt) > now) return { kind: "approval_pending" };
      // Its approvals have expired: they count as denied, and the turn ends (this message waits for it).
      this.ctx.waitUntil(this.resume(waiting.id));
      return { kind: "busy" };
    }
    if (input.userMessageId && !input.regenerate && messageById(this.db, input.userMessageId))
      return { kind: "key_reused" };
    const turnId = newId();
    const context: TurnContextRow = {
      workspaceId: input.workspace.id,
      actor: input.actor,
      agentId: input.agent.id,
      model: input.agent.model,
      profile: input.profile,
      userId: input.userId,
      workspaceName: input.workspace.name,
      origin: input.origin,
    };
    // The question and the turn are stored together, or neither is.
    const claim = this.ctx.storage.transactionSync(() => {
      const claimed = input.regenerate ? claimRegeneration(this.db) : claimNewMessage(this.db, input);
      if (!claimed) return null;
      const at = nowIso();
      context.question = { added: claimed.messagesAdded, at };
      const position = insertTurn(this.db, {
        id: turnId,
        userMessageId: claimed.userMessageId,
        state: "accepted",
        idempotencyKey: input.idempotencyKey,
        requestHash,
        context,
        startedAt: at,
      });
      return { ...claimed, position };
    });
    if (!claim) return { kind: "nothing_to_regenerate" };
    if (!input.regenerate)
      this.broadcast(() =>
        liveFrame.message(toMessage(input.conversationId, messageById(this.db, claim.userMessageId)!)),
      );
    this.running = runInRoom(this, { input: { ...input, content: claim.prompt }, turnId, context, ...claim });
    await this.ctx.storage.setAlarm(Date.now() + KEEP_ALIVE_MS);
    return this.answerFor(turnId, input.stream);
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
    const { decide } = await import("./approval-decisions");
    const answers: DecisionAnswer[] = [];
    const touched = new Set<string>();
    for (const decision of decisions) {
      const { answer, turnId } = await decide(this.env, conversationId, workspaceId, decision);
      answers.push(answer);
      if (turnId) touched.add(turnId);
    }
    let resumedAt: { turnId: string; seq: number } | null = null;
    for (const turnId of touched) {
      const seq = await this.resume(turnId);
      if (seq !== null) resumedAt = { turnId, seq };
    }
    if (!stream || !resumedAt) return { answers };
    return { answers, stream: followTurn(this.db, resumedAt.turnId, resumedAt.seq, this.running) };
  }

  /**
   * The waiting turn goes on if none of its approvals is pending any more (they expired when
   * its requester was erased): the calls count as denied. Answers once that segment has ended.
   */
  async resumeWaiting(conversationId: string, workspaceId: string): Promise<void> {
    await this.ready(conversationId, workspaceId);
    const [{ awaitingTurn }] = await turnCode();
    const waiting = awaitingTurn(this.db);
    if (waiting) await this.resume(waiting.id);
    await this.running?.settled;
  }

  /** Erasure: the reasons an erased member gave for their decisions go from the stored replies. */
  async forgetReasons(conversationId: string, workspaceId: string, given: GivenReason[]): Promise<void> {
    await this.ready(conversationId, workspaceId);
    const { forgetReasons } = await import("./approval-erasure");
    forgetReasons(this.db, given);
  }

  /** Resumes a waiting turn whose approvals are all decided; answers the sequence number its new segment follows. */
  private async resume(turnId: string): Promise<number | null> {
    if (this.running) return null;
    const [{ markResumed, resumeStart }, { runInRoom }] = await turnCode();
    const start = await resumeStart(this, turnId).catch((e: unknown) => {
      logError("room: resuming a turn after its approvals failed", e);
      return null;
    });
    // Two decisions may have got here at once: one resumes.
    if (!start || this.running || turnById(this.db, turnId)?.state !== "awaiting_approval") return null;
    markResumed(this.db, turnId, start.context);
    this.running = runInRoom(this, start);
    await this.ctx.storage.setAlarm(Date.now() + KEEP_ALIVE_MS);
    return start.resume.seq;
  }

  /** The stream of a turn from its start (or the stored reply, once it has ended). */
  private async answerFor(turnId: string, stream: boolean): Promise<TurnAnswer> {
    if (stream) return { kind: "stream", turnId, stream: followTurn(this.db, turnId, 0, this.running) };
    if (this.running?.turnId === turnId) await this.running.settled;
    const ended = turnById(this.db, turnId)!;
    const reply = messageById(this.db, ended.id);
    const userMessage = messageById(this.db, ended.userMessageId);
    if (!reply || !userMessage) return ended.failure ? { kind: "failed", failure: ended.failure } : { kind: "error" };
    const conversationId = this.identity!.conversationId;
    return {
      kind: "reply",
      userMessage: toMessage(conversationId, userMessage),
      reply: toMessage(conversationId, reply),
    };
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
    if (!live && lastSeq(this.db, turn.id) <= (after?.seq ?? 0)) return null;
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
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    this.identity = null;
    this.importing = null;
    await migrate(this.db, migrations);
  }

  /**
   * A participant's live socket (hibernating): every new message and the running turn's events.
   * The Worker has checked the caller; it names the conversation in the request's header.
   */
  override async fetch(request: Request): Promise<Response> {
    const viewer = liveViewerSchema().parse(JSON.parse(request.headers.get(LIVE_VIEWER_HEADER) ?? "null"));
    await this.ready(viewer.conversationId, viewer.workspaceId);
    const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
    this.ctx.acceptWebSocket(server, [viewer.userId]);
    // A viewer who arrives mid-turn sees the turn so far.
    const running = this.running;
    if (running)
      for (const e of eventsAfter(this.db, running.turnId, 0))
        server.send(JSON.stringify(liveFrame.chunk(running.turnId, e.seq, e.chunk)));
    return new Response(null, { status: 101, webSocket: client });
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    if (message === LIVE_PING) ws.send(LIVE_PONG);
  }

  override async webSocketClose(ws: WebSocket, code: number): Promise<void> {
    ws.close(code === 1005 ? 1000 : code, "closed");
  }

  /**
   * Keep-alive while a turn runs; after a restart, ends a turn that was cut short; then drops
   * the stream events past their 24 hours.
   */
  override async alarm(): Promise<void> {
    if (this.running) {
      await this.ctx.storage.setAlarm(Date.now() + KEEP_ALIVE_MS);
      return;
    }
    await this.recoverInterrupted();
    const next = pruneEvents(this.db, Date.now());
    // Wake again when the oldest kept events expire.
    if (next !== null) await this.ctx.storage.setAlarm(next);
  }

  /** Turns stored as running that no code runs any more (the room restarted) end as `failed`, billed for what they said. */
  private async recoverInterrupted(): Promise<void> {
    this.recovered = true;
    const orphans = runningTurns(this.db).filter((t) => t.id !== this.running?.turnId);
    if (!orphans.length) return;
    const [, { settleInterrupted }] = await turnCode();
    for (const turn of orphans) {
      await settleInterrupted(this, turn).catch((e) => logError("room: ending an interrupted turn failed", e));
    }
  }

  // Called by the running turn.

  /**
   * Numbers a stream event. The events of one task (a read of the model's answer brings
   * several) are stored in one statement once it is done, and only then sent to the turn's
   * followers and the live sockets: nothing leaves the room unstored, and a reader who joins
   * meanwhile reads the stored events and gets the others as a follower.
   */
  emit(running: RunningTurn, chunk: UIMessageChunk): void {
    const seq = ++running.seq;
    running.chunks.push(chunk);
    running.unstored ??= [];
    const unstored = running.unstored;
    unstored.push({ seq, json: JSON.stringify(chunk), chunk });
    if (unstored.length === 1) setTimeout(() => this.storeEvents(running), 0);
  }

  /** Stores the turn's unstored events, then sends them (nothing once the conversation is deleted). */
  storeEvents(running: RunningTurn): void {
    const events = running.unstored;
    if (!events?.length) return;
    running.unstored = [];
    if (this.running !== running) return;
    appendEvents(this.ctx.storage.sql, running.turnId, events);
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
    if (running.position > KEPT_TURNS) pruneOlderTurns(this.db);
  }

  get conversationId(): string {
    return this.identity!.conversationId;
  }

  get toolProviders(): readonly ToolProvider[] {
    return this.providers;
  }

  /** Runs `work` with delivery of the audit events it writes, as every entry point does. */
  delivering<T>(work: () => Promise<T>): Promise<T> {
    return deliveringAudit(this.env, this.ctx, work);
  }

  /** Sends a frame to every participant watching on the live socket (made only when someone watches). */
  broadcast(frame: LiveFrame | (() => LiveFrame)): void {
    const sockets = this.ctx.getWebSockets();
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

  /** Knows its conversation; on first use copies the messages it had in D1 before rooms held them. */
  private async ready(conversationId: string, workspaceId: string): Promise<void> {
    if (this.identity) return;
    if (meta(this.db, "conversation_id")) {
      this.identity = { conversationId, workspaceId };
      return;
    }
    this.importing ??= importFromD1(this.env, this.ctx.storage, this.db, conversationId, workspaceId);
    await this.importing;
    this.identity = { conversationId, workspaceId };
  }
}

/** What an idempotency key was first used for: the content and the agent asked. */
const requestDigest = (input: TurnInput) => hash("sha256", JSON.stringify([input.content, input.agent.id]), "hex");
