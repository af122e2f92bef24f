import { type AuditEventInput, auditInBatch } from "../audit/events";
import { debitStatement } from "../billing/ledger";
import { d1Statement } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { ApiError } from "../platform/problem";
import { type EndpointRecord, emailSlugOf, mailboxAddress } from "./endpoints";
import { type MessageRecord, sendAndRecord } from "./replies";
import { draftReply, reviewOwner } from "./triage-draft";
import { toEndpointRecord, toMessageRecord } from "./triage-records";
import { decide, readText, type Verdict } from "./triage-verdict";

type Drafted = Awaited<ReturnType<typeof draftReply>>;

/**
 * Triage of one received message, then its policy: no reply, spam, escalation, or a reply the
 * endpoint's agent drafts and that is sent at once (`auto`) or held for its review owner.
 * The verdict, the draft, its credits and the events commit in one batch.
 */
export async function triageMessage(env: Env, messageId: string, retry: boolean): Promise<void> {
  const message = await claimMessage(env, messageId, retry);
  if (!message) return;
  const endpoint = await env.DB.prepare("SELECT * FROM email_endpoints WHERE id = ?1")
    .bind(message.endpointId)
    .first<Record<string, unknown>>()
    .then((r) => (r ? toEndpointRecord(r) : null));
  const text = await readText(env, message);
  const verdict: Verdict = endpoint
    ? await decide(env, endpoint, message, text)
    : { state: "no_reply", reason: "endpoint_deleted" };
  const outcome = new TriageOutcome(env, message, verdict);

  if (verdict.state !== "reply" || !endpoint) {
    const agentId = verdict.state !== "reply" ? verdict.agentId : undefined;
    await outcome.record(verdict.state, agentId ? { agent_id: agentId } : {});
    return;
  }
  let drafted: Drafted;
  try {
    drafted = await draftReply(env, endpoint, verdict.agent, message, text, verdict.triage);
  } catch (error) {
    if (error instanceof ApiError && (error.status === 402 || error.status === 503)) {
      await outcome.record("no_reply", { reason: error.code });
      return;
    }
    throw error; // the queue retries
  }
  const replyId = await storeReply(env, outcome, endpoint, verdict.review, drafted);
  if (!verdict.review) await sendAndRecord(env, replyId, { kind: "system", id: null });
}

/**
 * The claim: one run decides a message, however often the queue delivers it. A retry takes
 * over a run that died mid-way (`triaged` for over two minutes).
 */
async function claimMessage(env: Env, messageId: string, retry: boolean): Promise<MessageRecord | null> {
  const stale = new Date(Date.now() - 120_000).toISOString();
  return env.DB.prepare(
    `UPDATE email_messages SET handling_state = 'triaged', updated_at = ?2
     WHERE id = ?1 AND direction = 'inbound'
       AND (handling_state = 'received' OR (?3 = 1 AND handling_state = 'triaged' AND updated_at < ?4))
     RETURNING *`,
  )
    .bind(messageId, nowIso(), retry ? 1 : 0, stale)
    .first<Record<string, unknown>>()
    .then((r) => (r ? toMessageRecord(r) : null));
}

/** The statements that write a verdict: the inbound message's new state and its event. */
class TriageOutcome {
  readonly now = nowIso();
  constructor(
    private readonly env: Env,
    readonly message: MessageRecord,
    private readonly verdict: Verdict,
  ) {}

  inboundUpdate(state: string, agentId: string | null = null) {
    const triage = this.verdict.triage;
    return this.env.DB.prepare(
      `UPDATE email_messages SET handling_state = ?2, llm_category = ?3, llm_summary = ?4, language = ?5,
         spam_score_pct = ?6, agent_id = ?7, updated_at = ?8 WHERE id = ?1`,
    ).bind(
      this.message.id,
      state,
      triage?.category ?? null,
      triage?.summary ?? null,
      triage?.language ?? null,
      triage ? Math.round(triage.spam_score * 100) : null,
      agentId,
      this.now,
    );
  }

  event(state: string, extra: Record<string, unknown> = {}): D1PreparedStatement {
    const { message, verdict } = this;
    const event: AuditEventInput = {
      workspaceId: message.workspaceId,
      kind: "email.triage",
      actor: { kind: "system", id: null },
      target: `email_message:${message.id}`,
      intent: "triage",
      details: {
        endpoint_id: message.endpointId,
        state,
        reason: verdict.reason,
        category: verdict.triage?.category ?? null,
        spam_score: verdict.triage?.spam_score ?? null,
        dmarc: message.dmarc,
        ...extra,
      },
    };
    return d1Statement(this.env, auditInBatch(this.env, event));
  }

  /** A verdict without a reply: the state and its event. */
  async record(state: string, extra: Record<string, unknown> = {}): Promise<void> {
    await this.env.DB.batch([this.inboundUpdate(state), this.event(state, extra)]);
  }
}

/** The drafted reply, the inbound message's new state, the credits and the event, in one batch. */
async function storeReply(
  env: Env,
  outcome: TriageOutcome,
  endpoint: EndpointRecord,
  review: boolean,
  { agent, outcome: turn }: Drafted,
): Promise<string> {
  const { message, now } = outcome;
  const replyId = newId();
  const from = mailboxAddress(env, endpoint.localpart, await emailSlugOf(env, endpoint.workspaceId));
  const owner = await reviewOwner(env, endpoint);
  await env.DB.batch([
    env.DB.prepare(
      `INSERT INTO email_messages (id, workspace_id, endpoint_id, direction, reply_to_id, from_addr, to_addrs, subject,
         handling_state, agent_id, review_owner_id, body, occurred_at, updated_at)
       VALUES (?1, ?2, ?3, 'outbound', ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12)`,
    ).bind(
      replyId,
      message.workspaceId,
      endpoint.id,
      message.id,
      from,
      JSON.stringify([message.fromAddr]),
      message.subject,
      review ? "awaiting_review" : "approved",
      agent.id,
      owner,
      turn.text.trim(),
      now,
    ),
    outcome.inboundUpdate(review ? "awaiting_review" : "replied", agent.id),
    debitStatement(env, message.workspaceId, turn.usage.credits, replyId),
    outcome.event(review ? "awaiting_review" : "replied", {
      reply_id: replyId,
      agent_id: agent.id,
      credits: turn.usage.credits,
      steps: turn.steps,
    }),
  ]);
  return replyId;
}
