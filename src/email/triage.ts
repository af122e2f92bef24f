import { and, eq, lt, or } from "drizzle-orm";
import { type AuditEventInput, auditInBatch } from "../audit/events";
import { debitInsert } from "../billing/ledger";
import { emailEndpoints, emailMessages } from "../db/schema";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { ApiError } from "../platform/problem";
import { type EndpointRecord, emailSlugOf, mailboxAddress } from "./endpoints";
import { type MessageRecord, sendAndRecord } from "./replies";
import { draftReply, reviewOwner } from "./triage-draft";
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
  const endpoint = await db(env).select().from(emailEndpoints).where(eq(emailEndpoints.id, message.endpointId)).get();
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
  const claimable = eq(emailMessages.handlingState, "received");
  const abandoned = and(eq(emailMessages.handlingState, "triaged"), lt(emailMessages.updatedAt, stale));
  const row = await db(env)
    .update(emailMessages)
    .set({ handlingState: "triaged", updatedAt: nowIso() })
    .where(
      and(
        eq(emailMessages.id, messageId),
        eq(emailMessages.direction, "inbound"),
        retry ? or(claimable, abandoned) : claimable,
      ),
    )
    .returning()
    .get();
  return row ?? null;
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
    return db(this.env)
      .update(emailMessages)
      .set({
        handlingState: state,
        llmCategory: triage?.category ?? null,
        llmSummary: triage?.summary ?? null,
        language: triage?.language ?? null,
        spamScore: triage ? Math.round(triage.spam_score * 100) : null,
        agentId,
        updatedAt: this.now,
      })
      .where(eq(emailMessages.id, this.message.id));
  }

  event(state: string, extra: Record<string, unknown> = {}) {
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
    return auditInBatch(this.env, event);
  }

  /** A verdict without a reply: the state and its event. */
  async record(state: string, extra: Record<string, unknown> = {}): Promise<void> {
    await db(this.env).batch([this.inboundUpdate(state), this.event(state, extra)]);
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
  const d = db(env);
  await d.batch([
    d.insert(emailMessages).values({
      id: replyId,
      workspaceId: message.workspaceId,
      endpointId: endpoint.id,
      direction: "outbound",
      replyToId: message.id,
      fromAddr: from,
      toAddrs: JSON.stringify([message.fromAddr]),
      subject: message.subject,
      handlingState: review ? "awaiting_review" : "approved",
      agentId: agent.id,
      reviewOwnerId: owner,
      body: turn.text.trim(),
      occurredAt: now,
      updatedAt: now,
    }),
    outcome.inboundUpdate(review ? "awaiting_review" : "replied", agent.id),
    debitInsert(env, message.workspaceId, turn.usage.credits, replyId),
    outcome.event(review ? "awaiting_review" : "replied", {
      reply_id: replyId,
      agent_id: agent.id,
      credits: turn.usage.credits,
      steps: turn.steps,
    }),
  ]);
  return replyId;
}
