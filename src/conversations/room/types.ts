import type { UIMessageChunk } from "ai";
import type { AgentRecord, Capabilities } from "../../agents/service";
import type { AuditActor } from "../../audit/events";
import type { ToolProvider } from "../../platform/turn-tools";
import type { Message } from "../schemas";
import type { LiveFrame } from "./live";
import type { ModelFailure, StoredPart } from "./schema";
import type { RoomDb } from "./store";

/** Who asks for a turn, as the turn records and bills it. */
export type TurnCaller = {
  workspace: { id: string; name: string };
  userId: string;
  actor: AuditActor;
  origin: string;
};

/** What the Worker hands the room once it has checked the caller, the conversation and the agent. */
export type TurnInput = TurnCaller & {
  conversationId: string;
  agent: AgentRecord;
  /** The skills and MCP servers the agent may use in this turn. */
  capabilities: Capabilities;
  profile: string;
  content: string;
  /** The user message's id as the client chose it (1-128 of `[A-Za-z0-9_-]`); a UUID v7 otherwise. */
  userMessageId?: string;
  /** Answer the last question again, in place of the last reply (the AI SDK's `regenerate-message`). */
  regenerate?: boolean;
  /** Earlier messages a client sends itself (the OpenAI-compatible route); the room's own otherwise. */
  history?: { role: "user" | "assistant"; content: string }[];
  idempotencyKey: string | null;
  /** The workspace had credits left (checked by the Worker); an idempotent repeat needs none. */
  hasCredits: boolean;
  /** The caller reads the stream; otherwise the answer waits for the stored reply. */
  stream: boolean;
  /** What the Worker read for the areas' tools in its own batch (see `TurnScope.prefetched`). */
  prefetched?: Record<string, unknown>;
  /**
   * The directory counts no message in the conversation, so D1 holds none from before rooms:
   * a room used for the first time has nothing to copy and asks D1 nothing.
   */
  nothingToImport?: boolean;
};

export type TurnAnswer =
  | { kind: "busy" }
  /** A turn waits for a person's approval: nothing new starts until it is decided. */
  | { kind: "approval_pending" }
  | { kind: "key_reused" }
  | { kind: "no_credits" }
  | { kind: "nothing_to_regenerate" }
  | { kind: "stream"; turnId: string; stream: ReadableStream<Uint8Array> }
  | { kind: "reply"; userMessage: Message; reply: Message }
  | { kind: "failed"; failure: ModelFailure }
  /** The conversation was deleted while the turn ran: nothing of it is kept. */
  | { kind: "gone" }
  /** The turn ended without a reply for a reason of ours (its end could not be stored). */
  | { kind: "error" };

export type RunningTurn = {
  turnId: string;
  /** Its place among the conversation's turns (1 for the first). */
  position: number;
  /** The last stream event's sequence number. */
  seq: number;
  /** Its stream events so far, in order (the reply is built from them when the turn ends). */
  chunks: UIMessageChunk[];
  /**
   * Events not stored yet (see `emit`): stored together once the current task is done while
   * someone reads the turn, else at the latest with its end.
   */
  unstored?: { seq: number; json: string; chunk: UIMessageChunk }[];
  /** Its state `streaming` is stored (with its first stored events). */
  streamingStored?: boolean;
  /**
   * A resumed segment's parts as the AI SDK built them on its stored message, once it ran whole
   * (not stopped); otherwise the parts are built from `chunks` when the turn ends.
   */
  parts?: StoredPart[];
  /** The SSE readers following the turn live. */
  followers: Set<ReadableStreamDefaultController<Uint8Array>>;
  /** The stream has ended (`finish` or `abort` stored): nothing more is sent. */
  closed: boolean;
  /** Settles once the turn is stored, billed and audited (or failed). */
  settled: Promise<void>;
  /** A participant stops the turn: the model call is aborted, the partial reply kept and billed. */
  stop(): void;
  /** The conversation is gone: stop, store nothing. */
  abandon(): void;
  /** Stores and sends its unstored events now: a reader is about to read the stored ones. */
  store(): void;
};

/** What a running turn uses of its room. */
export interface RoomHost {
  readonly env: Env;
  readonly ctx: DurableObjectState<Record<never, never>>;
  readonly db: RoomDb;
  readonly conversationId: string;
  readonly toolProviders: readonly ToolProvider[];
  emit(running: RunningTurn, chunk: UIMessageChunk): void;
  /** Stores and sends the events `emit` holds (see `emit`). */
  storeEvents(running: RunningTurn): void;
  /** Someone reads the turn as it runs: an SSE follower or a live socket. */
  watched(running: RunningTurn): boolean;
  closeFollowers(running: RunningTurn): void;
  finished(running: RunningTurn): void;
  broadcast(frame: LiveFrame | (() => LiveFrame)): void;
  delivering<T>(work: () => Promise<T>): Promise<T>;
}

/** What a new turn answers: its question (stored already), the prompt, the history before it. */
export type TurnClaim = {
  userMessageId: string;
  prompt: string;
  history: { role: "user" | "assistant"; content: string }[];
  /** How the conversation's message count changes as the turn starts (a regenerated reply goes). */
  messagesAdded: number;
};

/** What the room's own modules (intake.ts, resumption.ts) use of it, besides what a turn does. */
export interface Room extends RoomHost {
  running: RunningTurn | null;
  /** Turns a restart cut short were looked for since this instance started. */
  readonly recovered: boolean;
  /** The search for cut-short turns under way, if one is. */
  readonly recovering: Promise<void> | null;
  recoverInterrupted(): Promise<void>;
  /** Sets the heartbeat alarm while a turn runs, unless it is set already (see `ConversationRoomObject.keepAlive`). */
  keepAlive(): Promise<void> | undefined;
}
