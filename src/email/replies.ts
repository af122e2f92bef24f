import { and, desc, eq, inArray, isNull, lt, ne, or, sql } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import { type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { emailEndpoints, emailMessages, users } from "../db/schema";
import { decodeCursor, encodeCursor } from "../platform/cursor";
import { type Db, db, parseJsonArray } from "../platform/db";
import { nowIso } from "../platform/env";
import { literalLimit } from "../platform/limit";
import { conflict, notFound } from "../platform/problem";
import { workspaceRowWhere } from "../platform/workspace-rows";
import { emailDomain } from "./endpoints";
import type { ReplyRow } from "./schemas";
import { replyMessageId, sendReply } from "./send";

/** An inbound or outbound mail's row. */
export type MessageRecord = typeof emailMessages.$inferSelect;

const REVIEWED = ["approved", "sent", "rejected", "send_failed"];

const reply = alias(emailMessages, "o");
const inbound = alias(emailMessages, "i");

/** A reply's columns, with its mail's triage and its mailbox. */
function replies(d: Db) {
  return d
    .select({
      id: reply.id,
      direction: reply.direction,
      fromAddr: reply.fromAddr,
      toAddrs: reply.toAddrs,
      subject: reply.subject,
      handlingState: reply.handlingState,
      occurredAt: reply.occurredAt,
      agentId: reply.agentId,
      endpointId: reply.endpointId,
      reviewOwnerId: reply.reviewOwnerId,
      body: reply.body,
      lastError: reply.lastError,
      llmCategory: inbound.llmCategory,
      llmSummary: inbound.llmSummary,
      endpointLocalpart: emailEndpoints.localpart,
      endpointPlane: emailEndpoints.plane,
    })
    .from(reply)
    .leftJoin(inbound, eq(inbound.id, reply.replyToId))
    .leftJoin(emailEndpoints, eq(emailEndpoints.id, reply.endpointId));
}

type ReplyDbRow = Awaited<ReturnType<ReturnType<typeof replies>["all"]>>[number];

function toReplyRow(r: ReplyDbRow): ReplyRow {
  const opt = (v: string | null) => v ?? undefined;
  return {
    email_message_id: r.id,
    direction: r.direction as ReplyRow["direction"],
    from_addr: r.fromAddr,
    to_addrs: parseJsonArray(r.toAddrs),
    subject: opt(r.subject),
    handling_state: r.handlingState,
    occurred_at: r.occurredAt,
    agent_id: opt(r.agentId),
    endpoint_id: r.endpointId,
    endpoint_localpart: opt(r.endpointLocalpart),
    endpoint_plane: opt(r.endpointPlane),
    llm_category: opt(r.llmCategory),
    llm_summary: opt(r.llmSummary),
    review_owner_id: opt(r.reviewOwnerId),
    body: opt(r.body),
    last_error: opt(r.lastError),
  };
}

/** One page of the caller's replies to review (`awaiting_review`), or of the ones already reviewed; newest first. */
export async function listReplies(
  env: Env,
  workspaceId: string,
  userId: string,
  query: { reviewed: boolean; limit: number; cursor?: string },
): Promise<{ rows: ReplyRow[]; next_cursor: string | null }> {
  const after = query.cursor ? decodeCursor(query.cursor) : null;
  const results = await replies(db(env))
    .where(
      and(
        eq(reply.workspaceId, workspaceId),
        eq(reply.reviewOwnerId, userId),
        eq(reply.direction, "outbound"),
        inArray(reply.handlingState, query.reviewed ? REVIEWED : ["awaiting_review"]),
        after
          ? or(lt(reply.occurredAt, after.at), and(eq(reply.occurredAt, after.at), lt(reply.id, after.id)))
          : undefined,
      ),
    )
    .orderBy(desc(reply.occurredAt), desc(reply.id))
    .limit(literalLimit(query.limit + 1))
    .all();
  const rows = results.slice(0, query.limit).map(toReplyRow);
  const last = rows.at(-1);
  return {
    rows,
    next_cursor: results.length > query.limit && last ? encodeCursor(last.occurred_at, last.email_message_id) : null,
  };
}

async function replyRow(env: Env, id: string): Promise<ReplyRow> {
  const row = await replies(db(env)).where(eq(reply.id, id)).get();
  if (!row) throw notFound("No such reply");
  return toReplyRow(row);
}

/** The mail a reply answered, if this review (at `now`) just rejected the reply. */
const rejectedMail = (d: Db, replyId: string, now: string) => {
  const r = alias(emailMessages, "r");
  return d
    .select({ id: r.replyToId })
    .from(r)
    .where(and(eq(r.id, replyId), eq(r.handlingState, "rejected"), eq(r.reviewedAt, now)));
};

/**
 * Approves or rejects a reply the caller owns. Approval (also of a reply whose send failed:
 * a retry) takes the row to `approved` in one conditional update, then sends it; a reply
 * already decided is a 409, another user's or unknown one a 404.
 */
export async function reviewReply(
  env: Env,
  who: { workspaceId: string; userId: string; actor: AuditEventInput["actor"] },
  id: string,
  input: { action: "approve" | "reject"; body?: string },
): Promise<ReplyRow> {
  const d = db(env);
  const row = await d
    .select({ handlingState: emailMessages.handlingState })
    .from(emailMessages)
    .where(
      and(
        workspaceRowWhere(emailMessages, who.workspaceId, id),
        eq(emailMessages.reviewOwnerId, who.userId),
        eq(emailMessages.direction, "outbound"),
      ),
    )
    .get();
  if (!row) throw notFound("No such reply to review");
  const now = nowIso();
  const next = input.action === "approve" ? "approved" : "rejected";
  const event: AuditEventInput = {
    workspaceId: who.workspaceId,
    kind: "email.review",
    actor: who.actor,
    target: `email_message:${id}`,
    intent: input.action,
    details: { action: input.action, edited: input.body !== undefined, previous_state: row.handlingState },
  };
  const [claimed] = await d.batch([
    d
      .update(emailMessages)
      .set({ handlingState: next, body: input.body, reviewedAt: now, updatedAt: now })
      .where(
        and(
          eq(emailMessages.id, id),
          eq(emailMessages.reviewOwnerId, who.userId),
          // An approval also retries a reply whose send failed.
          inArray(
            emailMessages.handlingState,
            next === "approved" ? ["awaiting_review", "send_failed"] : ["awaiting_review"],
          ),
        ),
      )
      .returning({ id: emailMessages.id }),
    auditInBatch(env, event, { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
    // A rejected draft leaves its mail unanswered.
    d
      .update(emailMessages)
      .set({ handlingState: "no_reply", updatedAt: now })
      .where(and(eq(emailMessages.id, rejectedMail(d, id, now)), eq(emailMessages.handlingState, "awaiting_review"))),
  ]);
  if (!claimed.length) throw conflict("already_reviewed", "This reply was already reviewed");
  if (input.action === "approve") await sendAndRecord(env, id, who.actor);
  return replyRow(env, id);
}

/** An `approved` reply with what threading it needs from the mail it answers. */
async function approvedReply(env: Env, replyId: string) {
  return db(env)
    .select({
      workspaceId: reply.workspaceId,
      fromAddr: reply.fromAddr,
      toAddrs: reply.toAddrs,
      body: reply.body,
      replyToId: inbound.id,
      subject: inbound.subject,
      messageIdHeader: inbound.messageIdHeader,
      referencesHeader: inbound.referencesHeader,
    })
    .from(reply)
    .innerJoin(inbound, eq(inbound.id, reply.replyToId))
    .where(and(eq(reply.id, replyId), eq(reply.handlingState, "approved")))
    .get();
}

/**
 * Sends an `approved` reply as a threaded answer from its mailbox and records the outcome:
 * `sent` (its inbound message `replied`), or `send_failed` with the error, which a new
 * approval retries. Each outcome commits with its `email.send` event.
 */
export async function sendAndRecord(env: Env, replyId: string, actor: AuditEventInput["actor"]): Promise<void> {
  const sent = await approvedReply(env, replyId);
  if (!sent) return;
  let error: string | null = null;
  try {
    await sendReply(env, {
      messageId: replyMessageId(replyId, emailDomain(env)),
      from: sent.fromAddr,
      to: parseJsonArray(sent.toAddrs)[0]!,
      subject: sent.subject,
      body: sent.body ?? "",
      inReplyTo: sent.messageIdHeader,
      references: sent.referencesHeader,
    });
  } catch (e) {
    error = String(e).slice(0, 500);
  }
  const now = nowIso();
  const event: AuditEventInput = {
    workspaceId: sent.workspaceId,
    kind: "email.send",
    actor,
    outcome: error ? "error" : "success",
    target: `email_message:${replyId}`,
    intent: "send",
    details: { reply_to_id: sent.replyToId, threaded: !!sent.messageIdHeader, error: error ?? undefined },
  };
  const d = db(env);
  await d.batch([
    d
      .update(emailMessages)
      .set({
        handlingState: error ? "send_failed" : "sent",
        lastError: error,
        sentAt: error ? null : now,
        updatedAt: now,
        messageIdHeader: error ? null : replyMessageId(replyId, emailDomain(env)),
      })
      .where(and(eq(emailMessages.id, replyId), eq(emailMessages.handlingState, "approved"))),
    auditInBatch(env, event, { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
    // The mail is answered only when the reply went (the statement stays, so the batch keeps its shape).
    d
      .update(emailMessages)
      .set({ handlingState: "replied", updatedAt: now })
      .where(and(eq(emailMessages.id, sent.replyToId), sql`${error ? 1 : 0} = 0`)),
  ]);
}

/** The workspace's first admin (the oldest) other than `except`. */
export const firstAdmin = (d: Db, workspaceId: string, except?: string) =>
  d
    .select({ id: users.id })
    .from(users)
    .where(
      and(
        eq(users.workspaceId, workspaceId),
        eq(users.role, "admin"),
        isNull(users.erasedAt),
        except ? ne(users.id, except) : undefined,
      ),
    )
    .orderBy(users.createdAt, users.id)
    .limit(literalLimit(1));

/** Erasure: replies the user was to review move to another admin of the workspace (or stay unowned). */
export async function reassignReviews(
  env: Env,
  workspaceId: string,
  userId: string,
): Promise<{ email_reviews_moved: number }> {
  const d = db(env);
  const result = await d
    .update(emailMessages)
    .set({ reviewOwnerId: sql`${firstAdmin(d, workspaceId, userId)}`, updatedAt: nowIso() })
    .where(
      and(
        eq(emailMessages.workspaceId, workspaceId),
        eq(emailMessages.reviewOwnerId, userId),
        eq(emailMessages.handlingState, "awaiting_review"),
      ),
    )
    .run();
  return { email_reviews_moved: result.meta.changes };
}
