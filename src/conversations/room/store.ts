import { and, desc, eq, gt, inArray, lt, notInArray, sql } from "drizzle-orm";
import { type DrizzleSqliteDODatabase, drizzle } from "drizzle-orm/durable-sqlite";
import { builtOnFirstUse } from "../../platform/built-on-first-use";
import { literalLimit } from "../../platform/limit";
import type { Message } from "../schemas";
import type * as schema from "./schema";
import { type ModelFailure, messages, roomMeta, streamEvents, type TurnState, turns } from "./schema";

export type RoomDb = DrizzleSqliteDODatabase<typeof schema> & { $client: DurableObjectStorage };
export type MessageRow = typeof messages.$inferSelect;
export type TurnRow = typeof turns.$inferSelect;

/** Turns whose events stay readable, and for how long after they end. */
export const KEPT_TURNS = 20;
export const EVENTS_TTL_MS = 24 * 3600_000;
/** How long an `Idempotency-Key` answers with its first turn. */
export const IDEMPOTENCY_TTL_MS = 24 * 3600_000;
/** How many of the newest messages a turn reads for its history (the profile's budget cuts further). */
const HISTORY_ROWS = 200;

export const RUNNING: readonly TurnState[] = ["accepted", "streaming"];
/** Turns whose events do not expire: a waiting turn's stream goes on when it resumes, numbered on. */
const UNFINISHED: readonly TurnState[] = [...RUNNING, "awaiting_approval"];

const ph = sql.placeholder;

/**
 * The statements a turn runs, each prepared once per isolate, when first used: built on every
 * use, the queries cost more than SQLite takes to run them (a turn runs a dozen), and built per
 * room they cost every room that wakes (most wake for a turn or two) about 5 ms of CPU.
 */
function prepare(d: DrizzleSqliteDODatabase) {
  const since = ph("since");
  const newest = () =>
    d.select({ id: turns.id }).from(turns).orderBy(desc(turns.position)).limit(literalLimit(KEPT_TURNS));
  return builtOnFirstUse({
    meta: () =>
      d
        .select()
        .from(roomMeta)
        .where(eq(roomMeta.key, ph("key")))
        .prepare(),
    messageById: () =>
      d
        .select()
        .from(messages)
        .where(eq(messages.id, ph("id")))
        .prepare(),
    lastMessage: () => d.select().from(messages).orderBy(desc(messages.position)).limit(literalLimit(1)).prepare(),
    lastOfRole: () =>
      d
        .select()
        .from(messages)
        .where(eq(messages.role, ph("role")))
        .orderBy(desc(messages.position))
        .limit(literalLimit(1))
        .prepare(),
    history: () =>
      d
        .select({ role: messages.role, content: messages.content })
        .from(messages)
        .where(lt(messages.position, ph("before")))
        .orderBy(desc(messages.position))
        .limit(literalLimit(HISTORY_ROWS))
        .prepare(),
    insertMessage: () =>
      d
        .insert(messages)
        .values({
          id: ph("id"),
          role: ph("role"),
          authorUserId: ph("authorUserId"),
          agentId: ph("agentId"),
          content: ph("content"),
          parts: ph("parts"),
          toolCalls: ph("toolCalls"),
          artifactIds: ph("artifactIds"),
          inputTokens: ph("inputTokens"),
          outputTokens: ph("outputTokens"),
          credits: ph("credits"),
          stopped: ph("stopped"),
          createdAt: ph("createdAt"),
        })
        .prepare(),
    turnById: () =>
      d
        .select()
        .from(turns)
        .where(eq(turns.id, ph("id")))
        .prepare(),
    insertTurn: () =>
      d
        .insert(turns)
        .values({
          id: ph("id"),
          userMessageId: ph("userMessageId"),
          state: ph("state"),
          idempotencyKey: ph("idempotencyKey"),
          requestHash: ph("requestHash"),
          context: ph("context"),
          startedAt: ph("startedAt"),
        })
        .returning({ position: turns.position })
        .prepare(),
    setTurnState: () =>
      d
        .update(turns)
        .set({ state: sql`${ph("state")}` })
        .where(eq(turns.id, ph("id")))
        .prepare(),
    questionWritten: () =>
      d
        .update(turns)
        .set({ context: sql`json_remove(${turns.context}, '$.question')` })
        .where(eq(turns.id, ph("id")))
        .prepare(),
    // The failure comes as its JSON text, or null.
    endTurn: () =>
      d
        .update(turns)
        .set({ state: sql`${ph("state")}`, failure: sql`${ph("failure")}`, endedAt: sql`${ph("endedAt")}` })
        .where(eq(turns.id, ph("id")))
        .prepare(),
    running: () =>
      d
        .select()
        .from(turns)
        .where(inArray(turns.state, [...RUNNING]))
        .prepare(),
    awaiting: () => d.select().from(turns).where(eq(turns.state, "awaiting_approval")).limit(literalLimit(1)).prepare(),
    lastTurnOn: () =>
      d
        .select()
        .from(turns)
        .where(eq(turns.userMessageId, ph("userMessageId")))
        .orderBy(desc(turns.position))
        .limit(literalLimit(1))
        .prepare(),
    turnByKey: () =>
      d
        .select()
        .from(turns)
        .where(and(eq(turns.idempotencyKey, ph("key")), gt(turns.startedAt, since)))
        .prepare(),
    releaseKey: () =>
      d
        .update(turns)
        .set({ idempotencyKey: null })
        .where(and(eq(turns.idempotencyKey, ph("key")), lt(turns.startedAt, since)))
        .prepare(),
    // The chunk comes as its JSON text, the one the stream sends.
    appendEvent: () =>
      d
        .insert(streamEvents)
        .values({ turnId: ph("turnId"), seq: ph("seq"), chunk: sql`${ph("chunk")}` })
        .prepare(),
    eventsAfter: () =>
      d
        .select({ seq: streamEvents.seq, chunk: streamEvents.chunk })
        .from(streamEvents)
        .where(and(eq(streamEvents.turnId, ph("turnId")), gt(streamEvents.seq, ph("seq"))))
        .orderBy(streamEvents.seq)
        .prepare(),
    eventTextsAfter: () =>
      d
        .select({ seq: streamEvents.seq, json: sql<string>`${streamEvents.chunk}` })
        .from(streamEvents)
        .where(and(eq(streamEvents.turnId, ph("turnId")), gt(streamEvents.seq, ph("seq"))))
        .orderBy(streamEvents.seq)
        .prepare(),
    lastSeq: () =>
      d
        .select({ seq: sql<number>`coalesce(max(${streamEvents.seq}), 0)` })
        .from(streamEvents)
        .where(eq(streamEvents.turnId, ph("turnId")))
        .prepare(),
    pruneOlder: () => d.delete(streamEvents).where(notInArray(streamEvents.turnId, newest())).prepare(),
    pruneExpired: () =>
      d
        .delete(streamEvents)
        .where(
          inArray(
            streamEvents.turnId,
            d
              .select({ id: turns.id })
              .from(turns)
              .where(and(lt(turns.endedAt, ph("expired")), notInArray(turns.state, [...UNFINISHED]))),
          ),
        )
        .prepare(),
    oldestKept: () =>
      d
        .select({ endedAt: sql<string | null>`min(${turns.endedAt})` })
        .from(turns)
        .where(
          and(
            inArray(turns.id, d.selectDistinct({ id: streamEvents.turnId }).from(streamEvents)),
            notInArray(turns.state, [...UNFINISHED]),
          ),
        )
        .prepare(),
  });
}

/** The storage of the room whose statement runs now (see `statements`). */
let inHand: DurableObjectStorage | null = null;
const shared = prepare(
  drizzle({
    get sql() {
      return inHand!.sql;
    },
  } as DurableObjectStorage),
);

/**
 * The isolate's statements, put to run on room `d`'s storage. A statement runs synchronously,
 * so none of another room comes between this call and the statement it is for: use the answer
 * at once, never across an `await`.
 */
function statements(d: RoomDb) {
  inHand = d.$client;
  return shared;
}

export function toMessage(conversationId: string, r: MessageRow): Message {
  return {
    id: r.id,
    conversation_id: conversationId,
    role: r.role,
    author_user_id: r.authorUserId,
    agent_id: r.agentId,
    content: r.content,
    parts: r.parts,
    tool_calls: r.toolCalls,
    artifact_ids: r.artifactIds,
    usage: { input_tokens: r.inputTokens, output_tokens: r.outputTokens, credits: r.credits },
    stopped: r.stopped,
    created_at: r.createdAt,
  };
}

export const meta = (d: RoomDb, key: string) => statements(d).meta.get({ key })?.value;
export const setMeta = (d: RoomDb, key: string, value: string) =>
  d.insert(roomMeta).values({ key, value }).onConflictDoUpdate({ target: roomMeta.key, set: { value } }).run();

export const allMessages = (d: RoomDb) => d.select().from(messages).orderBy(messages.position).all();
export const messageById = (d: RoomDb, id: string) => statements(d).messageById.get({ id });

export const lastMessage = (d: RoomDb, role?: "user" | "assistant") =>
  role ? statements(d).lastOfRole.get({ role }) : statements(d).lastMessage.get();

/** The newest messages (before `position`, when given), oldest first, as the model's history. */
export function recentHistory(d: RoomDb, before?: number): { role: "user" | "assistant"; content: string }[] {
  return statements(d)
    .history.all({ before: before ?? Number.MAX_SAFE_INTEGER })
    .reverse();
}

type NewMessage = Omit<typeof messages.$inferInsert, "position">;

/** Stores a message (the last one: `position` follows the others). */
export function insertMessage(d: RoomDb, m: NewMessage): void {
  statements(d).insertMessage.run({ inputTokens: 0, outputTokens: 0, credits: 0, stopped: false, ...m });
}

export const turnById = (d: RoomDb, id: string) => statements(d).turnById.get({ id });

/** The newest turn on a question: a regeneration's turn answers it in place of the first one. */
export const lastTurnOn = (d: RoomDb, userMessageId: string): TurnRow | undefined =>
  statements(d).lastTurnOn.get({ userMessageId });

/** Stores a new turn; answers its position (1 for a conversation's first turn). */
export function insertTurn(d: RoomDb, t: Omit<typeof turns.$inferInsert, "position" | "failure" | "endedAt">): number {
  return statements(d).insertTurn.get({ idempotencyKey: null, requestHash: null, ...t })!.position;
}

export const setTurnState = (d: RoomDb, id: string, state: TurnState) => statements(d).setTurnState.run({ id, state });

/** The question of the turn has reached the directory (see `TurnContextRow.question`). */
export const questionWritten = (d: RoomDb, id: string) => statements(d).questionWritten.run({ id });

/** A turn ends in `state`: when, and why the model did not answer (if it did not). */
export function endTurn(d: RoomDb, id: string, state: TurnState, failure: ModelFailure | null, endedAt: string): void {
  statements(d).endTurn.run({ id, state, failure: failure ? JSON.stringify(failure) : null, endedAt });
}
/** The turns stored as running (`accepted` or `streaming`). */
export const runningTurns = (d: RoomDb) => statements(d).running.all();
/** The turn that waits for approvals, if one does (at most one: no turn starts meanwhile). */
export const awaitingTurn = (d: RoomDb): TurnRow | undefined => statements(d).awaiting.get();

export function turnByKey(d: RoomDb, key: string, now: number): TurnRow | undefined {
  return statements(d).turnByKey.get({ key, since: new Date(now - IDEMPOTENCY_TTL_MS).toISOString() });
}

/** A key older than 24 h is free again: its old turn lets go of it. */
export function releaseStaleKey(d: RoomDb, key: string, now: number): void {
  statements(d).releaseKey.run({ key, since: new Date(now - IDEMPOTENCY_TTL_MS).toISOString() });
}

/** Stores a stream event; `json` is the chunk's JSON text (`JSON.stringify(chunk)`). */
export function appendEvent(d: RoomDb, turnId: string, seq: number, json: string): void {
  statements(d).appendEvent.run({ turnId, seq, chunk: json });
}

/** Rows per INSERT of `appendEvents` (3 bound values each, well under SQLite's limit). */
const EVENTS_PER_INSERT = 100;

/** Stores stream events in order, many rows per statement (`json` as in `appendEvent`), on the room's SQL. */
export function appendEvents(
  sqlite: SqlStorage,
  turnId: string,
  events: readonly { seq: number; json: string }[],
): void {
  for (let i = 0; i < events.length; i += EVENTS_PER_INSERT) {
    const rows = events.slice(i, i + EVENTS_PER_INSERT);
    sqlite.exec(
      `INSERT INTO stream_events (turn_id, seq, chunk) VALUES ${rows.map(() => "(?, ?, ?)").join(", ")}`,
      ...rows.flatMap((e) => [turnId, e.seq, e.json]),
    );
  }
}

export const eventsAfter = (d: RoomDb, turnId: string, seq: number) => statements(d).eventsAfter.all({ turnId, seq });

/** `eventsAfter` with each chunk as its stored JSON text, as a replay sends it. */
export const eventTextsAfter = (d: RoomDb, turnId: string, seq: number) =>
  statements(d).eventTextsAfter.all({ turnId, seq });

export const lastSeq = (d: RoomDb, turnId: string) => statements(d).lastSeq.get({ turnId })?.seq ?? 0;

/** The events of turns older than the newest 20 go (as each turn ends; the alarm drops those past 24 h). */
export const pruneOlderTurns = (d: RoomDb) => statements(d).pruneOlder.run();

/**
 * Keeps the events of the newest 20 turns that ended within 24 h (and of a running turn).
 * Answers when the oldest events kept expire (null when none are left to expire).
 */
export function pruneEvents(d: RoomDb, now: number): number | null {
  const s = statements(d);
  s.pruneOlder.run();
  s.pruneExpired.run({ expired: new Date(now - EVENTS_TTL_MS).toISOString() });
  const oldest = s.oldestKept.get()?.endedAt;
  return oldest ? Date.parse(oldest) + EVENTS_TTL_MS : null;
}
