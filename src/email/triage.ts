import { generateText, Output } from "ai";
import { type AgentRecord, agentCapabilities, getAgentRecord, resolveAgent, toAgentRow } from "../agents/service";
import { type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { debitStatement, requireCredits } from "../billing/ledger";
import type { AreaRegistry } from "../http/registry";
import { agentLanguageModel } from "../llm/model";
import { d1Statement } from "../platform/db";
import { baseUrl, nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { ApiError } from "../platform/problem";
import type { HistoryMessage } from "../runtime/history";
import { runTurn } from "../runtime/turn";
import { type EndpointRecord, emailDomain, emailSlugOf, mailboxAddress } from "./endpoints";
import { queueTriage, type TriageJob } from "./inbound";
import { type MessageRecord, sendAndRecord } from "./replies";
import { type Triage, TriageSchema } from "./schemas";
import { repliesReferenced } from "./send";

/** Triage spam above this score (0-1) unless the endpoint sets its own `spam_score_max`. */
export const DEFAULT_SPAM_SCORE_MAX = 0.8;
/** Deliveries of one message before it is given up (`dead_letter`). */
export const MAX_TRIAGE_ATTEMPTS = 3;
const NO_TOOLS: AreaRegistry["tools"] = [];
/** The start of an email's text the model reads. */
const BODY_CHARS = 8000;
/** Earlier exchanges of a thread a draft sees (each: their mail, our sent reply). */
const THREAD_EXCHANGES = 3;

type Verdict =
  | {
      state: "no_reply" | "rejected_sender" | "spam" | "escalated";
      reason: string;
      triage?: Triage;
      agentId?: string;
    }
  | { state: "reply"; review: boolean; reason: string; triage: Triage; agent: AgentRecord };

/** Glob of an address (`*@acme.com`, `ada@acme.com`), case-insensitive. */
export function matchesPattern(address: string, pattern: string): boolean {
  const re = new RegExp(
    `^${pattern
      .toLowerCase()
      .replace(/[.+?^${}()|[\]\\]/g, "\\$&")
      .replace(/\*/g, ".*")}$`,
  );
  return re.test(address.toLowerCase());
}

async function senderAllowed(env: Env, endpoint: EndpointRecord, from: string): Promise<boolean> {
  if (endpoint.senderPolicy === "anyone") return true;
  if (endpoint.senderPolicy === "allowlist")
    return (JSON.parse(endpoint.allowPatterns) as string[]).some((p) => matchesPattern(from, p));
  const member = await env.DB.prepare(
    "SELECT 1 FROM users WHERE workspace_id = ?1 AND lower(email) = ?2 AND erased_at IS NULL",
  )
    .bind(endpoint.workspaceId, from)
    .first();
  return member !== null;
}

/** Replies drafted today (UTC) by the endpoint, and to this sender. */
async function repliesToday(env: Env, endpoint: EndpointRecord, to: string) {
  const since = `${new Date().toISOString().slice(0, 10)}T00:00:00.000Z`;
  const row = await env.DB.prepare(
    `SELECT count(*) AS total, sum(to_addrs = ?3) AS sender FROM email_messages
     WHERE endpoint_id = ?1 AND direction = 'outbound' AND occurred_at >= ?2 AND handling_state <> 'rejected'`,
  )
    .bind(endpoint.id, since, JSON.stringify([to]))
    .first<{ total: number; sender: number | null }>();
  return { total: row?.total ?? 0, sender: row?.sender ?? 0 };
}

async function readText(env: Env, message: Pick<MessageRecord, "rawKey">): Promise<string> {
  const object = message.rawKey ? await env.FILES.get(message.rawKey) : null;
  if (!object) return "";
  const { default: PostalMime } = await import("postal-mime");
  const email = await PostalMime.parse(await object.arrayBuffer());
  return (email.text ?? email.html?.replace(/<[^>]+>/g, " ") ?? "").slice(0, BODY_CHARS);
}

const asPrompt = (from: string, subject: string | null, text: string) =>
  `From: ${from}\nSubject: ${subject ?? ""}\n\n${text}`;

/**
 * The thread so far, oldest first: for each reply of ours the message names in its
 * `References` / `In-Reply-To` (our Message-IDs are `<reply id@EMAIL_DOMAIN>`), the mail it
 * answered and what we sent. At most the last THREAD_EXCHANGES, of this mailbox only.
 */
async function threadHistory(env: Env, message: MessageRecord): Promise<HistoryMessage[]> {
  const ids = repliesReferenced(message.referencesHeader, emailDomain(env));
  if (!ids.length) return [];
  const { results } = await env.DB.prepare(
    `SELECT o.body, i.id, i.from_addr, i.subject, i.raw_key FROM email_messages o
     JOIN email_messages i ON i.id = o.reply_to_id
     WHERE o.id IN (SELECT value FROM json_each(?1)) AND o.workspace_id = ?2 AND o.endpoint_id = ?3
       AND o.direction = 'outbound' AND o.handling_state = 'sent'
     ORDER BY o.sent_at DESC LIMIT ?4`,
  )
    .bind(JSON.stringify(ids), message.workspaceId, message.endpointId, THREAD_EXCHANGES)
    .all<{ body: string; id: string; from_addr: string; subject: string | null; raw_key: string | null }>();
  const history: HistoryMessage[] = [];
  for (const r of results.reverse()) {
    const text = await readText(env, { rawKey: r.raw_key });
    history.push({ role: "user", content: asPrompt(r.from_addr, r.subject, text) });
    history.push({ role: "assistant", content: r.body });
  }
  return history;
}

/** The model's reading of a message: category, one-line summary, language, spam score. */
async function triageWithModel(env: Env, message: MessageRecord, text: string): Promise<Triage | null> {
  const model = agentLanguageModel(env, { runtime_profile: "fast", model: null });
  if (!model) return null;
  const { output } = await generateText({
    model,
    output: Output.object({ schema: TriageSchema }),
    system:
      "You triage email that reached a company's mailbox. Classify it, summarize it in one sentence without " +
      "personal data, name its language as a BCP 47 tag, and rate how likely it is spam (0 to 1).",
    prompt: `From: ${message.fromAddr}\nSubject: ${message.subject ?? ""}\n\n${text}`,
    maxRetries: 1,
  });
  return output;
}

async function decide(env: Env, endpoint: EndpointRecord, message: MessageRecord, text: string): Promise<Verdict> {
  if (!endpoint.enabled) return { state: "no_reply", reason: "endpoint_disabled" };
  if (message.unrouted) return { state: "no_reply", reason: "unrouted" };
  const agent = await endpointAgent(env, endpoint);
  if (agent.status !== "enabled") return { state: "no_reply", reason: "agent_disabled", agentId: agent.id };
  // `members` and `allowlist` trust the From address; a DMARC failure says it may be forged.
  if (endpoint.senderPolicy !== "anyone" && message.dmarc === "fail")
    return { state: "rejected_sender", reason: "dmarc_fail" };
  if (!(await senderAllowed(env, endpoint, message.fromAddr)))
    return { state: "rejected_sender", reason: "sender_policy" };
  if (message.autoSubmitted) return { state: "no_reply", reason: "auto_submitted" };
  const triage = await triageWithModel(env, message, text);
  if (!triage) return { state: "no_reply", reason: "model_not_configured" };
  const spamMax = endpoint.spamScoreMax === null ? DEFAULT_SPAM_SCORE_MAX : endpoint.spamScoreMax / 100;
  if (triage.spam_score > spamMax) return { state: "spam", reason: "spam_score", triage };
  const action = (JSON.parse(endpoint.categoryPolicy) as Record<string, string>)[triage.category] ?? "reply";
  if (action === "ignore") return { state: "no_reply", reason: "category_ignored", triage };
  if (action === "escalate" && endpoint.allowEscalation) return { state: "escalated", reason: "category", triage };
  if (endpoint.replyPolicy === "never") return { state: "no_reply", reason: "reply_policy_never", triage };
  const today = await repliesToday(env, endpoint, message.fromAddr);
  if (endpoint.maxTurnsPerDay !== null && today.total >= endpoint.maxTurnsPerDay)
    return { state: "no_reply", reason: "daily_limit", triage };
  if (endpoint.maxTurnsPerSenderDay !== null && today.sender >= endpoint.maxTurnsPerSenderDay)
    return { state: "no_reply", reason: "sender_daily_limit", triage };
  // A DMARC failure may be a forged sender: a person reads the reply before it goes.
  const review =
    endpoint.replyPolicy === "review" || action === "review" || action === "escalate" || message.dmarc === "fail";
  return { state: "reply", review, reason: message.dmarc === "fail" ? "dmarc_fail" : action, triage, agent };
}

/** The endpoint's review owner: the first of `deliver_to`, else the workspace's first admin. */
async function reviewOwner(env: Env, endpoint: EndpointRecord): Promise<string> {
  const chosen = endpoint.deliverTo ? (JSON.parse(endpoint.deliverTo) as { user_ids: string[] }).user_ids : [];
  const row = await env.DB.prepare(
    `SELECT id FROM users WHERE workspace_id = ?1 AND erased_at IS NULL
       AND (id IN (SELECT value FROM json_each(?2)) OR (?3 = 0 AND role = 'admin'))
     ORDER BY (id IN (SELECT value FROM json_each(?2))) DESC, created_at, id LIMIT 1`,
  )
    .bind(endpoint.workspaceId, JSON.stringify(chosen), chosen.length)
    .first<{ id: string }>();
  if (row) return row.id;
  const admin = await env.DB.prepare(
    "SELECT id FROM users WHERE workspace_id = ?1 AND role = 'admin' AND erased_at IS NULL ORDER BY created_at, id LIMIT 1",
  )
    .bind(endpoint.workspaceId)
    .first<{ id: string }>();
  if (!admin) throw new Error("the workspace has no admin to review email");
  return admin.id;
}

/**
 * The agent that answers a mailbox: the one it names, else the workspace's default agent (which
 * is always enabled). A named agent that is disabled is returned as it is, and its mail goes
 * unanswered: a disabled agent answers on no surface, and its mailbox is not handed to another.
 */
async function endpointAgent(env: Env, endpoint: EndpointRecord): Promise<AgentRecord> {
  if (!endpoint.agentId) return resolveAgent(env, endpoint.workspaceId);
  return getAgentRecord(env, endpoint.workspaceId, endpoint.agentId);
}

/** The agent's draft: one turn with the endpoint's instructions, the mail as the prompt. */
async function draftReply(
  env: Env,
  endpoint: EndpointRecord,
  agent: AgentRecord,
  message: MessageRecord,
  text: string,
  triage: Triage,
) {
  const model = agentLanguageModel(env, toAgentRow(agent));
  if (!model) throw new ApiError(503, "model_not_configured", "No language model is configured");
  await requireCredits(env, endpoint.workspaceId);
  const workspace = await env.DB.prepare("SELECT id, name FROM workspaces WHERE id = ?1")
    .bind(endpoint.workspaceId)
    .first<{ id: string; name: string }>();
  const language = endpoint.defaultReplyLang ?? triage.language;
  const turn = await runTurn({
    env,
    model,
    profile: agent.runtimeProfile,
    // No tools: the prompt is an outsider's mail, and a draft never needs to act (prompt injection).
    providers: NO_TOOLS,
    workspace: workspace!,
    userId: await reviewOwner(env, endpoint),
    agent: { ...toAgentRow(agent), ...(await agentCapabilities(env, agent)) },
    conversationId: null,
    turnId: newId(),
    origin: baseUrl(env, "http://localhost"),
    // A reply to one of ours continues its thread: the earlier mails and our replies come first.
    history: await threadHistory(env, message),
    prompt:
      `${endpoint.instructions ? `${endpoint.instructions}\n\n` : ""}` +
      `Write the reply to this email, in ${language}. Answer with the reply's text only: no subject line, ` +
      `no headers, no placeholders.\n\n${asPrompt(message.fromAddr, message.subject, text)}`,
  });
  const outcome = await turn.done;
  if (outcome.finish === "failed" || !outcome.text.trim()) throw new Error("the model did not draft a reply");
  return { agent, outcome };
}

/**
 * Triage of one received message, then its policy: no reply, spam, escalation, or a reply the
 * endpoint's agent drafts and that is sent at once (`auto`) or parked for its review owner.
 * The verdict, the draft, its credits and the events commit in one batch.
 */
export async function triageMessage(env: Env, messageId: string, retry: boolean): Promise<void> {
  // The claim: one run decides a message, however often the queue delivers it. A retry takes
  // over a run that died mid-way (`triaged` for over two minutes).
  const stale = new Date(Date.now() - 120_000).toISOString();
  const message = await env.DB.prepare(
    `UPDATE email_messages SET handling_state = 'triaged', updated_at = ?2
     WHERE id = ?1 AND direction = 'inbound'
       AND (handling_state = 'received' OR (?3 = 1 AND handling_state = 'triaged' AND updated_at < ?4))
     RETURNING *`,
  )
    .bind(messageId, nowIso(), retry ? 1 : 0, stale)
    .first<Record<string, unknown>>()
    .then((r) => (r ? toMessageRecord(r) : null));
  if (!message) return;
  const endpoint = await env.DB.prepare("SELECT * FROM email_endpoints WHERE id = ?1")
    .bind(message.endpointId)
    .first<Record<string, unknown>>()
    .then((r) => (r ? toEndpointRecord(r) : null));
  const text = await readText(env, message);
  const verdict: Verdict = endpoint
    ? await decide(env, endpoint, message, text)
    : { state: "no_reply", reason: "endpoint_deleted" };
  const now = nowIso();
  const triage = verdict.triage;
  const inboundUpdate = (state: string, agentId: string | null = null) =>
    env.DB.prepare(
      `UPDATE email_messages SET handling_state = ?2, llm_category = ?3, llm_summary = ?4, language = ?5,
         spam_score_pct = ?6, agent_id = ?7, updated_at = ?8 WHERE id = ?1`,
    ).bind(
      message.id,
      state,
      triage?.category ?? null,
      triage?.summary ?? null,
      triage?.language ?? null,
      triage ? Math.round(triage.spam_score * 100) : null,
      agentId,
      now,
    );
  const event = (state: string, extra: Record<string, unknown> = {}): AuditEventInput => ({
    workspaceId: message.workspaceId,
    kind: "email.triage",
    actor: { kind: "system", id: null },
    target: `email_message:${message.id}`,
    intent: "triage",
    details: {
      endpoint_id: message.endpointId,
      state,
      reason: verdict.reason,
      category: triage?.category ?? null,
      spam_score: triage?.spam_score ?? null,
      dmarc: message.dmarc,
      ...extra,
    },
  });

  if (verdict.state !== "reply" || !endpoint) {
    const agentId = verdict.state !== "reply" ? verdict.agentId : undefined;
    await env.DB.batch([
      inboundUpdate(verdict.state),
      d1Statement(env, auditInBatch(env, event(verdict.state, agentId ? { agent_id: agentId } : {}))),
    ]);
    return;
  }

  let drafted: Awaited<ReturnType<typeof draftReply>>;
  try {
    drafted = await draftReply(env, endpoint, verdict.agent, message, text, verdict.triage);
  } catch (error) {
    if (error instanceof ApiError && (error.status === 402 || error.status === 503)) {
      await env.DB.batch([
        inboundUpdate("no_reply"),
        d1Statement(env, auditInBatch(env, event("no_reply", { reason: error.code }))),
      ]);
      return;
    }
    throw error; // the queue retries
  }
  const { agent, outcome } = drafted;
  const replyId = newId();
  const from = mailboxAddress(env, endpoint.localpart, await emailSlugOf(env, endpoint.workspaceId));
  const owner = await reviewOwner(env, endpoint);
  const outboundState = verdict.review ? "awaiting_review" : "approved";
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
      outboundState,
      agent.id,
      owner,
      outcome.text.trim(),
      now,
    ),
    inboundUpdate(verdict.review ? "awaiting_review" : "replied", agent.id),
    debitStatement(env, message.workspaceId, outcome.usage.credits, replyId),
    d1Statement(
      env,
      auditInBatch(
        env,
        event(verdict.review ? "awaiting_review" : "replied", {
          reply_id: replyId,
          agent_id: agent.id,
          credits: outcome.usage.credits,
          steps: outcome.steps,
        }),
      ),
    ),
  ]);
  if (!verdict.review) await sendAndRecord(env, replyId, { kind: "system", id: null });
}

export type { MessageRecord };

export function toMessageRecord(r: Record<string, unknown>): MessageRecord {
  return {
    id: r.id as string,
    workspaceId: r.workspace_id as string,
    endpointId: r.endpoint_id as string,
    direction: r.direction as string,
    replyToId: (r.reply_to_id as string | null) ?? null,
    fromAddr: r.from_addr as string,
    toAddrs: r.to_addrs as string,
    subject: (r.subject as string | null) ?? null,
    messageIdHeader: (r.message_id_header as string | null) ?? null,
    referencesHeader: (r.references_header as string | null) ?? null,
    rawKey: (r.raw_key as string | null) ?? null,
    unrouted: !!r.unrouted,
    autoSubmitted: !!r.auto_submitted,
    dmarc: r.dmarc as string,
    handlingState: r.handling_state as string,
  };
}

function toEndpointRecord(r: Record<string, unknown>): EndpointRecord {
  return {
    id: r.id as string,
    workspaceId: r.workspace_id as string,
    localpart: r.localpart as string,
    kind: r.kind as string,
    plane: r.plane as string,
    agentId: (r.agent_id as string | null) ?? null,
    enabled: !!r.enabled,
    replyPolicy: r.reply_policy as string,
    senderPolicy: r.sender_policy as string,
    allowPatterns: r.allow_patterns as string,
    allowEscalation: !!r.allow_escalation,
    categoryPolicy: r.category_policy as string,
    deliverTo: (r.deliver_to as string | null) ?? null,
    defaultReplyLang: (r.default_reply_lang as string | null) ?? null,
    instructions: (r.instructions as string | null) ?? null,
    maxTurnsPerDay: (r.max_turns_per_day as number | null) ?? null,
    maxTurnsPerSenderDay: (r.max_turns_per_sender_day as number | null) ?? null,
    spamScoreMax: (r.spam_score_max_pct as number | null) ?? null,
    createdAt: r.created_at as string,
    updatedAt: r.updated_at as string,
  };
}

/**
 * The `email-triage` consumer: each message on its own; a failure is retried by the queue,
 * and after `MAX_TRIAGE_ATTEMPTS` the message is `dead_letter` (kept, visible, not answered).
 */
export async function consumeTriage(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  for (const msg of batch.messages) {
    const job = msg.body as Partial<TriageJob>;
    if (typeof job?.message_id !== "string") {
      msg.ack();
      continue;
    }
    try {
      await triageMessage(env, job.message_id, msg.attempts > 1);
      msg.ack();
    } catch (error) {
      console.error(
        JSON.stringify({ level: "error", msg: "email triage failed", attempts: msg.attempts, error: String(error) }),
      );
      if (msg.attempts >= MAX_TRIAGE_ATTEMPTS) {
        await giveUp(env, job.message_id, error);
        msg.ack();
      } else {
        await release(env, job.message_id, error);
        msg.retry();
      }
    }
  }
}

/** A failed run hands the message back for the queue's next delivery. */
async function release(env: Env, messageId: string, error: unknown): Promise<void> {
  await env.DB.prepare(
    "UPDATE email_messages SET handling_state = 'received', last_error = ?2 WHERE id = ?1 AND handling_state = 'triaged'",
  )
    .bind(messageId, String(error).slice(0, 500))
    .run();
}

async function giveUp(env: Env, messageId: string, error: unknown): Promise<void> {
  const row = await env.DB.prepare("SELECT workspace_id, endpoint_id FROM email_messages WHERE id = ?1")
    .bind(messageId)
    .first<{ workspace_id: string; endpoint_id: string }>();
  if (!row) return;
  const event: AuditEventInput = {
    workspaceId: row.workspace_id,
    kind: "email.triage",
    actor: { kind: "system", id: null },
    outcome: "error",
    target: `email_message:${messageId}`,
    intent: "triage",
    details: { endpoint_id: row.endpoint_id, state: "dead_letter", reason: "attempts_exhausted" },
  };
  await env.DB.batch([
    env.DB.prepare(
      `UPDATE email_messages SET handling_state = 'dead_letter', last_error = ?2, updated_at = ?3
       WHERE id = ?1 AND handling_state IN ('received', 'triaged')`,
    ).bind(messageId, String(error).slice(0, 500), nowIso()),
    d1Statement(env, auditInBatch(env, event, { onlyIf: PREVIOUS_STATEMENT_CHANGED })),
  ]);
}

/** Cron: mail still `received` ten minutes on (its job was never queued) is queued again. */
export async function sweepReceived(env: Env): Promise<void> {
  const cutoff = new Date(Date.now() - 10 * 60_000).toISOString();
  const { results } = await env.DB.prepare(
    "SELECT id FROM email_messages WHERE handling_state = 'received' AND occurred_at < ?1 LIMIT 100",
  )
    .bind(cutoff)
    .all<{ id: string }>();
  for (const r of results) await queueTriage(env, r.id);
}
