import { type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { decodeCursor, encodeCursor } from "../platform/cursor";
import { d1Statement, parseJsonArray } from "../platform/db";
import { nowIso } from "../platform/env";
import { conflict, notFound } from "../platform/problem";
import { emailDomain } from "./endpoints";
import type { ReplyRow } from "./schemas";
import { replyMessageId, sendReply } from "./send";

export type MessageRecord = {
  id: string;
  workspaceId: string;
  endpointId: string;
  direction: string;
  replyToId: string | null;
  fromAddr: string;
  toAddrs: string;
  subject: string | null;
  messageIdHeader: string | null;
  referencesHeader: string | null;
  rawKey: string | null;
  unrouted: boolean;
  autoSubmitted: boolean;
  dmarc: string;
  handlingState: string;
};

const REVIEWED = ["approved", "sent", "rejected", "send_failed"];

const REPLY_COLUMNS = `o.id, o.direction, o.from_addr, o.to_addrs, o.subject, o.handling_state, o.occurred_at,
  o.agent_id, o.endpoint_id, o.review_owner_id, o.body, o.last_error, i.llm_category, i.llm_summary,
  e.localpart AS endpoint_localpart, e.plane AS endpoint_plane`;
const REPLY_FROM = `email_messages o LEFT JOIN email_messages i ON i.id = o.reply_to_id
  LEFT JOIN email_endpoints e ON e.id = o.endpoint_id`;

type ReplyDbRow = Record<string, string | null>;

function toReplyRow(r: ReplyDbRow): ReplyRow {
  const opt = (v: string | null | undefined) => v ?? undefined;
  return {
    email_message_id: r.id!,
    direction: r.direction as ReplyRow["direction"],
    from_addr: r.from_addr!,
    to_addrs: parseJsonArray(r.to_addrs),
    subject: opt(r.subject),
    handling_state: r.handling_state!,
    occurred_at: r.occurred_at!,
    agent_id: opt(r.agent_id),
    endpoint_id: opt(r.endpoint_id),
    endpoint_localpart: opt(r.endpoint_localpart),
    endpoint_plane: opt(r.endpoint_plane),
    llm_category: opt(r.llm_category),
    llm_summary: opt(r.llm_summary),
    review_owner_id: opt(r.review_owner_id),
    body: opt(r.body),
    last_error: opt(r.last_error),
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
  const { results } = await env.DB.prepare(
    `SELECT ${REPLY_COLUMNS} FROM ${REPLY_FROM}
     WHERE o.workspace_id = ?1 AND o.review_owner_id = ?2 AND o.direction = 'outbound'
       AND o.handling_state IN (SELECT value FROM json_each(?3))
       AND (?4 IS NULL OR o.occurred_at < ?4 OR (o.occurred_at = ?4 AND o.id < ?5))
     ORDER BY o.occurred_at DESC, o.id DESC LIMIT ?6`,
  )
    .bind(
      workspaceId,
      userId,
      JSON.stringify(query.reviewed ? REVIEWED : ["awaiting_review"]),
      after?.at ?? null,
      after?.id ?? null,
      query.limit + 1,
    )
    .all<ReplyDbRow>();
  const rows = results.slice(0, query.limit).map(toReplyRow);
  const last = rows.at(-1);
  return {
    rows,
    next_cursor: results.length > query.limit && last ? encodeCursor(last.occurred_at, last.email_message_id) : null,
  };
}

async function replyRow(env: Env, id: string): Promise<ReplyRow> {
  const row = await env.DB.prepare(`SELECT ${REPLY_COLUMNS} FROM ${REPLY_FROM} WHERE o.id = ?1`)
    .bind(id)
    .first<ReplyDbRow>();
  if (!row) throw notFound("No such reply");
  return toReplyRow(row);
}

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
  const row = await env.DB.prepare(
    `SELECT handling_state FROM email_messages
     WHERE id = ?1 AND workspace_id = ?2 AND review_owner_id = ?3 AND direction = 'outbound'`,
  )
    .bind(id, who.workspaceId, who.userId)
    .first<{ handling_state: string }>();
  if (!row) throw notFound("No such reply to review");
  const now = nowIso();
  const next = input.action === "approve" ? "approved" : "rejected";
  const event: AuditEventInput = {
    workspaceId: who.workspaceId,
    kind: "email.review",
    actor: who.actor,
    target: `email_message:${id}`,
    intent: input.action,
    details: { action: input.action, edited: input.body !== undefined, previous_state: row.handling_state },
  };
  const [claimed] = await env.DB.batch([
    env.DB.prepare(
      `UPDATE email_messages SET handling_state = ?2, body = COALESCE(?3, body), reviewed_at = ?4, updated_at = ?4
       WHERE id = ?1 AND review_owner_id = ?5
         AND (handling_state = 'awaiting_review' OR (?2 = 'approved' AND handling_state = 'send_failed'))
       RETURNING id`,
    ).bind(id, next, input.body ?? null, now, who.userId),
    d1Statement(env, auditInBatch(env, event, { onlyIf: PREVIOUS_STATEMENT_CHANGED })),
    // A rejected draft leaves its mail unanswered.
    env.DB.prepare(
      `UPDATE email_messages SET handling_state = 'no_reply', updated_at = ?2
       WHERE id = (SELECT reply_to_id FROM email_messages WHERE id = ?1 AND handling_state = 'rejected' AND reviewed_at = ?2)
         AND handling_state = 'awaiting_review'`,
    ).bind(id, now),
  ]);
  if (!claimed?.results.length) throw conflict("already_reviewed", "This reply was already reviewed");
  if (input.action === "approve") await sendAndRecord(env, id, who.actor);
  return replyRow(env, id);
}

/**
 * Sends an `approved` reply as a threaded answer from its mailbox and records the outcome:
 * `sent` (its inbound message `replied`), or `send_failed` with the error, which a new
 * approval retries. Each outcome commits with its `email.send` event.
 */
export async function sendAndRecord(env: Env, replyId: string, actor: AuditEventInput["actor"]): Promise<void> {
  const reply = await env.DB.prepare(
    `SELECT o.workspace_id, o.from_addr, o.to_addrs, o.body, o.reply_to_id, i.subject, i.message_id_header, i.references_header
     FROM email_messages o JOIN email_messages i ON i.id = o.reply_to_id
     WHERE o.id = ?1 AND o.handling_state = 'approved'`,
  )
    .bind(replyId)
    .first<{
      workspace_id: string;
      from_addr: string;
      to_addrs: string;
      body: string;
      reply_to_id: string;
      subject: string | null;
      message_id_header: string | null;
      references_header: string | null;
    }>();
  if (!reply) return;
  const to = parseJsonArray(reply.to_addrs)[0]!;
  let error: string | null = null;
  try {
    await sendReply(env, {
      messageId: replyMessageId(replyId, emailDomain(env)),
      from: reply.from_addr,
      to,
      subject: reply.subject,
      body: reply.body,
      inReplyTo: reply.message_id_header,
      references: reply.references_header,
    });
  } catch (e) {
    error = String(e).slice(0, 500);
  }
  const now = nowIso();
  const event: AuditEventInput = {
    workspaceId: reply.workspace_id,
    kind: "email.send",
    actor,
    outcome: error ? "error" : "success",
    target: `email_message:${replyId}`,
    intent: "send",
    details: { reply_to_id: reply.reply_to_id, threaded: !!reply.message_id_header, error: error ?? undefined },
  };
  await env.DB.batch([
    env.DB.prepare(
      `UPDATE email_messages SET handling_state = ?2, last_error = ?3, sent_at = ?4, updated_at = ?5,
         message_id_header = ?6
       WHERE id = ?1 AND handling_state = 'approved'`,
    ).bind(
      replyId,
      error ? "send_failed" : "sent",
      error,
      error ? null : now,
      now,
      error ? null : replyMessageId(replyId, emailDomain(env)),
    ),
    d1Statement(env, auditInBatch(env, event, { onlyIf: PREVIOUS_STATEMENT_CHANGED })),
    env.DB.prepare(
      "UPDATE email_messages SET handling_state = 'replied', updated_at = ?2 WHERE id = ?1 AND ?3 = 0",
    ).bind(reply.reply_to_id, now, error ? 1 : 0),
  ]);
}

/** Erasure: replies the user was to review move to another admin of the workspace (or stay unowned). */
export async function reassignReviews(
  env: Env,
  workspaceId: string,
  userId: string,
): Promise<{ email_reviews_moved: number }> {
  const result = await env.DB.prepare(
    `UPDATE email_messages SET review_owner_id = (
       SELECT id FROM users WHERE workspace_id = ?1 AND role = 'admin' AND erased_at IS NULL AND id <> ?2
       ORDER BY created_at, id LIMIT 1), updated_at = ?3
     WHERE workspace_id = ?1 AND review_owner_id = ?2 AND handling_state = 'awaiting_review'`,
  )
    .bind(workspaceId, userId, nowIso())
    .run();
  return { email_reviews_moved: result.meta.changes };
}
