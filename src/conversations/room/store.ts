import type { UIMessageChunk } from "ai";
import { and, desc, eq, gt, inArray, lt, notInArray, sql } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import type { Message } from "../schemas";
import type * as schema from "./schema";
import { messages, roomMeta, streamEvents, type TurnState, turns } from "./schema";

export type RoomDb = DrizzleSqliteDODatabase<typeof schema>;
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

export const meta = (d: RoomDb, key: string) => d.select().from(roomMeta).where(eq(roomMeta.key, key)).get()?.value;
export const setMeta = (d: RoomDb, key: string, value: string) =>
  d.insert(roomMeta).values({ key, value }).onConflictDoUpdate({ target: roomMeta.key, set: { value } }).run();

export const allMessages = (d: RoomDb) => d.select().from(messages).orderBy(messages.position).all();
export const messageById = (d: RoomDb, id: string) => d.select().from(messages).where(eq(messages.id, id)).get();

export const lastMessage = (d: RoomDb, role?: "user" | "assistant") =>
  d
    .select()
    .from(messages)
    .where(role ? eq(messages.role, role) : undefined)
    .orderBy(desc(messages.position))
    .limit(1)
    .get();

/** The newest messages (before `position`, when given), oldest first, as the model's history. */
export function recentHistory(d: RoomDb, before?: number): { role: "user" | "assistant"; content: string }[] {
  return d
    .select({ role: messages.role, content: messages.content })
    .from(messages)
    .where(before === undefined ? undefined : lt(messages.position, before))
    .orderBy(desc(messages.position))
    .limit(HISTORY_ROWS)
    .all()
    .reverse();
}

export const turnById = (d: RoomDb, id: string) => d.select().from(turns).where(eq(turns.id, id)).get();
export const turnsInState = (d: RoomDb, states: readonly TurnState[]) =>
  d
    .select()
    .from(turns)
    .where(inArray(turns.state, [...states]))
    .all();

export function turnByKey(d: RoomDb, key: string, now: number): TurnRow | undefined {
  const since = new Date(now - IDEMPOTENCY_TTL_MS).toISOString();
  return d
    .select()
    .from(turns)
    .where(and(eq(turns.idempotencyKey, key), gt(turns.startedAt, since)))
    .get();
}

/** A key older than 24 h is free again: its old turn lets go of it. */
export function releaseStaleKey(d: RoomDb, key: string, now: number): void {
  const since = new Date(now - IDEMPOTENCY_TTL_MS).toISOString();
  d.update(turns)
    .set({ idempotencyKey: null })
    .where(and(eq(turns.idempotencyKey, key), lt(turns.startedAt, since)))
    .run();
}

export function appendEvent(d: RoomDb, turnId: string, seq: number, chunk: UIMessageChunk): void {
  d.insert(streamEvents).values({ turnId, seq, chunk }).run();
}

export const eventsAfter = (d: RoomDb, turnId: string, seq: number) =>
  d
    .select({ seq: streamEvents.seq, chunk: streamEvents.chunk })
    .from(streamEvents)
    .where(and(eq(streamEvents.turnId, turnId), gt(streamEvents.seq, seq)))
    .orderBy(streamEvents.seq)
    .all();

export const lastSeq = (d: RoomDb, turnId: string) =>
  d
    .select({ seq: sql<number>`coalesce(max(${streamEvents.seq}), 0)` })
    .from(streamEvents)
    .where(eq(streamEvents.turnId, turnId))
    .get()?.seq ?? 0;

/**
 * Keeps the events of the newest 20 turns that ended within 24 h (and of a running turn).
 * Answers when the oldest events kept expire (null when none are left to expire).
 */
export function pruneEvents(d: RoomDb, now: number): number | null {
  const kept = d
    .select({ id: turns.id })
    .from(turns)
    .orderBy(desc(turns.position))
    .limit(KEPT_TURNS)
    .all()
    .map((t) => t.id);
  const expired = new Date(now - EVENTS_TTL_MS).toISOString();
  d.delete(streamEvents).where(notInArray(streamEvents.turnId, kept)).run();
  d.delete(streamEvents)
    .where(
      inArray(
        streamEvents.turnId,
        d
          .select({ id: turns.id })
          .from(turns)
          .where(and(lt(turns.endedAt, expired), notInArray(turns.state, [...RUNNING]))),
      ),
    )
    .run();
  const oldest = d
    .select({ endedAt: sql<string | null>`min(${turns.endedAt})` })
    .from(turns)
    .where(inArray(turns.id, d.selectDistinct({ id: streamEvents.turnId }).from(streamEvents)))
    .get()?.endedAt;
  return oldest ? Date.parse(oldest) + EVENTS_TTL_MS : null;
}
