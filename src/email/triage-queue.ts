/** The `email-triage` queue: its consumer, its give-up rule, and the cron that re-queues stuck mail. */
import { and, eq, inArray, lt } from "drizzle-orm";
import { type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { emailMessages } from "../db/schema";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { literalLimit } from "../platform/limit";
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
  await db(env)
    .update(emailMessages)
    .set({ handlingState: "received", lastError: String(error).slice(0, 500) })
    .where(and(eq(emailMessages.id, messageId), eq(emailMessages.handlingState, "triaged")))
    .run();
}

async function giveUp(env: Env, messageId: string, error: unknown): Promise<void> {
  const d = db(env);
  const row = await d
    .select({ workspaceId: emailMessages.workspaceId, endpointId: emailMessages.endpointId })
    .from(emailMessages)
    .where(eq(emailMessages.id, messageId))
    .get();
  if (!row) return;
  const event: AuditEventInput = {
    workspaceId: row.workspaceId,
    kind: "email.triage",
    actor: { kind: "system", id: null },
    outcome: "error",
    target: `email_message:${messageId}`,
    intent: "triage",
    details: { endpoint_id: row.endpointId, state: "dead_letter", reason: "attempts_exhausted" },
  };
  await d.batch([
    d
      .update(emailMessages)
      .set({ handlingState: "dead_letter", lastError: String(error).slice(0, 500), updatedAt: nowIso() })
      .where(and(eq(emailMessages.id, messageId), inArray(emailMessages.handlingState, ["received", "triaged"]))),
    auditInBatch(env, event, { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
  ]);
}

/** Cron: mail still `received` ten minutes on (its job was never queued) is queued again. */
export async function sweepReceived(env: Env): Promise<void> {
  const cutoff = new Date(Date.now() - 10 * 60_000).toISOString();
  const results = await db(env)
    .select({ id: emailMessages.id })
    .from(emailMessages)
    .where(and(eq(emailMessages.handlingState, "received"), lt(emailMessages.occurredAt, cutoff)))
    .limit(literalLimit(100))
    .all();
  for (const r of results) await queueTriage(env, r.id);
}
