/**
 * Witness rounds: a workspace's latest checkpoint goes to every configured witness with a
 * consistency proof from the checkpoint that witness cosigned last (C2SP tlog-witness
 * `add-checkpoint`); what each answers is kept in the workspace's AuditLog object.
 * The checkpoint route queues a round at most once a minute per workspace; a witness that
 * cannot be reached is tried again when the message is retried.
 */
import { auditLog } from "../../durable-objects/audit-log/client";
import type { CheckpointHead } from "../../durable-objects/audit-log/types";
import { auditAlone } from "../audit/events";
import { nowIso } from "../platform/env";
import { logError, logWarning } from "../platform/log";
import { ApiError } from "../platform/problem";
import { auditSigner, checkpointBody, logOrigin } from "./checkpoint";
import { signNote } from "./signed-note";
import { addCheckpoint, validCosignature } from "./witness";
import { type ConfiguredWitness, configuredWitnesses } from "./witness-config";

export const WITNESS_QUEUE = "audit-witness";
/** How long a round waits before it tries the witnesses that could not be reached again. */
const RETRY_DELAY_SECONDS = 60;

/** A queued round: the workspace, and the origin the checkpoint route was asked at (for the log's origin line). */
export type WitnessRoundMessage = { workspace_id: string; request_origin: string };

/** What the checkpoint route reports of the witnesses (header `Audit-Witness-State`). */
export type WitnessState = "cosigned" | "pending" | "witness_conflict";

/** The cosignature lines (each ending in a newline) that verify for exactly this checkpoint, and the witnesses' state. */
export async function cosignatures(
  witnesses: ConfiguredWitness[],
  head: CheckpointHead,
  body: string,
): Promise<{ lines: string; state: WitnessState }> {
  let lines = "";
  let all = true;
  let conflict = false;
  for (const w of witnesses) {
    const held = head.witnesses.find((r) => r.witness === w.verifierKey);
    if (held?.conflict_at) conflict = true;
    const line =
      held?.cosignature && held.size === head.size && held.root === head.root
        ? await validCosignature(w, body, held.cosignature)
        : null;
    if (line) lines += `${line}\n`;
    else all = false;
  }
  return { lines, state: conflict ? "witness_conflict" : all ? "cosigned" : "pending" };
}

/** Queues a witness round; a queue that refuses only delays the round (it is claimed again a minute later). */
export async function queueWitnessRound(env: Env, message: WitnessRoundMessage): Promise<void> {
  try {
    await env.AUDIT_WITNESS.send(message);
  } catch (error) {
    logError("could not queue an audit witness round", error, { workspace_id: message.workspace_id });
  }
}

/**
 * Sends the workspace's current checkpoint to each witness that does not hold it yet; true when
 * every witness answered (cosigned or refused), false when one should be tried again.
 */
export async function witnessRound(env: Env, message: WitnessRoundMessage, fetcher: typeof fetch = fetch) {
  const witnesses = await configuredWitnesses(env);
  const workspaceId = message.workspace_id;
  const log = auditLog(env, workspaceId);
  const head = await log.checkpointHead(
    witnesses.map((w) => w.verifierKey),
    null,
  );
  if (!head.size) return true;
  const signer = await auditSigner(env, message.request_origin);
  const body = checkpointBody(logOrigin(env, message.request_origin, workspaceId), head.size, head.root);
  const note = await signNote(signer, body);
  let done = true;
  for (const w of witnesses) {
    const held = head.witnesses.find((r) => r.witness === w.verifierKey);
    if (held?.cosignature && held.size === head.size && held.root === head.root) continue;
    const send = async (oldSize: number) => {
      const proof = oldSize > 0 && oldSize < head.size ? (await log.consistencyProof(oldSize, head.size))!.hashes : [];
      return addCheckpoint(w, { oldSize, proof, signedCheckpoint: note, checkpointBody: body }, fetcher);
    };
    const oldSize = held?.cosignature ? held.size : 0;
    let answer = await send(oldSize);
    // A witness that holds a size of our tree we did not record (its answer to us was lost) gets a proof from there.
    if (answer.state === "conflict" && answer.size !== null && answer.size !== oldSize && answer.size <= head.size)
      answer = await send(answer.size);
    if (answer.state === "cosigned")
      await log.recordCosignature(w.verifierKey, head.size, head.root, answer.cosignature);
    else if (answer.state === "conflict") await witnessConflict(env, workspaceId, w, answer.size, head.size);
    else {
      logWarning("audit witness did not cosign; retrying later", undefined, { witness: w.name, detail: answer.detail });
      done = false;
    }
  }
  return done;
}

/** A witness refused our checkpoint: it saw another history of this log. Alerts once per refusal spell. */
async function witnessConflict(env: Env, workspaceId: string, w: ConfiguredWitness, size: number | null, ours: number) {
  const fresh = await auditLog(env, workspaceId).recordConflict(w.verifierKey, size, nowIso());
  logError("audit witness refused the checkpoint: it saw another history", undefined, {
    workspace_id: workspaceId,
    witness: w.name,
    witness_size: size,
    size: ours,
  });
  if (!fresh) return;
  await auditAlone(env, {
    kind: "audit.witness.conflict",
    workspaceId,
    actor: { kind: "system", id: null },
    outcome: "error",
    target: `witness:${w.name}`,
    intent: "conflict",
    details: { witness: w.name, witness_size: size, size: ours },
  });
}

/** The `audit-witness` queue's consumer: one round per message; a round a witness missed is retried. */
export async function consumeWitnessRounds(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  for (const message of batch.messages) {
    const body = message.body as Partial<WitnessRoundMessage> | null;
    if (typeof body?.workspace_id !== "string" || typeof body.request_origin !== "string") {
      logError("malformed audit witness round message", undefined, { body });
      message.ack();
      continue;
    }
    try {
      if (await witnessRound(env, body as WitnessRoundMessage)) message.ack();
      else message.retry({ delaySeconds: RETRY_DELAY_SECONDS });
    } catch (error) {
      logError("audit witness round failed", error, { workspace_id: body.workspace_id });
      // Configuration (witnesses, signing key) does not mend by waiting: the next round is queued once it is fixed.
      if (error instanceof ApiError) message.ack();
      else message.retry({ delaySeconds: RETRY_DELAY_SECONDS });
    }
  }
}
