/** A mailbox's counters: its mail by direction and state, and the languages of its sent replies. */
import { and, eq, isNotNull, type SQL, sql } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import { emailMessages } from "../db/schema";
import { type Db, db } from "../platform/db";
import type { Endpoint } from "./schemas";

export type Counters = Pick<
  Endpoint,
  "message_count" | "received" | "replied" | "awaiting_review" | "unrouted" | "escalated" | "needs_attention"
> & { last_occurred_at?: string; reply_languages: Record<string, number> };

export const NO_COUNTS: Counters = {
  message_count: 0,
  received: 0,
  replied: 0,
  awaiting_review: 0,
  unrouted: 0,
  escalated: 0,
  needs_attention: 0,
  reply_languages: {},
};

// One aggregate over the workspace's messages gives every endpoint's counters.
function counters(d: Db, workspaceId: string) {
  const m = emailMessages;
  const tally = (condition: SQL) => sql<number | null>`sum(${condition})`;
  return d
    .select({
      endpointId: m.endpointId,
      messageCount: sql<number>`count(*)`,
      received: tally(sql`${m.direction} = 'inbound'`),
      replied: tally(sql`${m.direction} = 'outbound' AND ${m.handlingState} = 'sent'`),
      awaitingReview: tally(sql`${m.direction} = 'outbound' AND ${m.handlingState} = 'awaiting_review'`),
      unrouted: tally(sql`${m.direction} = 'inbound' AND ${m.unrouted} = 1`),
      escalated: tally(sql`${m.direction} = 'inbound' AND ${m.handlingState} = 'escalated'`),
      lastOccurredAt: sql<string | null>`max(${m.occurredAt})`,
    })
    .from(m)
    .where(eq(m.workspaceId, workspaceId))
    .groupBy(m.endpointId);
}

// The language of each sent reply is its inbound message's (what triage found).
function replyLanguages(d: Db, workspaceId: string) {
  const reply = alias(emailMessages, "o");
  const mail = alias(emailMessages, "i");
  return d
    .select({ endpointId: reply.endpointId, language: mail.language, n: sql<number>`count(*)` })
    .from(reply)
    .innerJoin(mail, eq(mail.id, reply.replyToId))
    .where(
      and(
        eq(reply.workspaceId, workspaceId),
        eq(reply.direction, "outbound"),
        eq(reply.handlingState, "sent"),
        isNotNull(mail.language),
      ),
    )
    .groupBy(reply.endpointId, mail.language);
}

export async function countersOf(env: Env, workspaceId: string): Promise<Map<string, Counters>> {
  const d = db(env);
  const [counts, languages] = await d.batch([counters(d, workspaceId), replyLanguages(d, workspaceId)]);
  const out = new Map<string, Counters>();
  for (const r of counts) {
    out.set(r.endpointId, {
      message_count: r.messageCount,
      received: r.received ?? 0,
      replied: r.replied ?? 0,
      awaiting_review: r.awaitingReview ?? 0,
      unrouted: r.unrouted ?? 0,
      escalated: r.escalated ?? 0,
      needs_attention: (r.awaitingReview ?? 0) + (r.escalated ?? 0),
      last_occurred_at: r.lastOccurredAt ?? undefined,
      reply_languages: {},
    });
  }
  for (const r of languages) {
    const c = out.get(r.endpointId);
    if (c && c.replied > 0 && r.language) c.reply_languages[r.language] = r.n / c.replied;
  }
  return out;
}
