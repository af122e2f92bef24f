/** The `email-triage` queue: its consumer, its give-up rule, and the cron that re-queues stuck mail. */
import { type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { d1Statement } from "../platform/db";
import { nowIso } from "../platform/env";
import { queueTriage, type TriageJob } from "./inbound";
import { triageMessage } from "./triage";

/** Deliveries of one message before it is given up (`dead_letter`). */
export const MAX_TRIAGE_ATTEMPTS = 3;

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
