import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { auditLog } from "../../durable-objects/audit-log/client";
import { deliverNow } from "../audit/delivery";
import type { AppEnv } from "../http/context";
import { routesOf } from "../http/endpoint";
import { badRequest, notFound } from "../platform/problem";
import { auditSigner, checkpointBody, logOrigin } from "./checkpoint";
import {
  AuditEventWithLeafSchema,
  AuditListSchema,
  AuditQuerySchema,
  ConsistencyProofSchema,
  ConsistencyQuerySchema,
  EventParamsSchema,
  InclusionProofSchema,
  InclusionQuerySchema,
  VerifyQuerySchema,
  VerifyResultSchema,
} from "./schemas";
import { signNote, verifierKey } from "./signed-note";
import { configuredWitnesses } from "./witness-config";
import { cosignatures, queueWitnessRound } from "./witnessing";

const route = routesOf(["Audit"]);
const TEXT = "text/plain; charset=utf-8";
const text = (description: string) => ({ description, content: { [TEXT]: { schema: z.string() } } });

/** The caller's workspace log, read-your-writes: the events committed before this request are in it. */
async function deliveredLog(c: Context<AppEnv>) {
  const workspaceId = c.var.caller.workspace.id;
  await deliverNow(c.env, workspaceId);
  return auditLog(c.env, workspaceId);
}

const withDetails = <E extends { details: string }>(
  event: E,
): Omit<E, "details"> & { details: Record<string, unknown> } => ({
  ...event,
  details: JSON.parse(event.details) as Record<string, unknown>,
});

route("admin", "GET /v1/admin/audit", "List audit events, newest first", {
  query: AuditQuerySchema,
  responses: { 200: [AuditListSchema, "One page of events and the unpaginated total"], 400: "Malformed query" },
}).handle(async (c) => {
  const q = c.req.valid("query");
  const log = await deliveredLog(c);
  const { events, total } = await log.list(
    {
      days: q.days,
      kind: q.kind,
      outcome: q.outcome,
      actorKind: q.actor_kind,
      agentId: q.agent_id,
      conversationId: q.conversation_id,
      q: q.q,
    },
    { page: q.page, pageSize: q.page_size },
  );
  return c.json(
    {
      events: events.map(withDetails),
      total,
      page: q.page,
      page_size: q.page_size,
    },
    200,
  );
});

route("admin", "GET /v1/admin/audit/verify", "Verify the hash chain of the most recent entries", {
  description: "Walks the last `limit` entries in ascending order, anchored on the entry just before the first.",
  query: VerifyQuerySchema,
  responses: { 200: [VerifyResultSchema, "The verification result"], 400: "Malformed query" },
}).handle(async (c) => {
  const log = await deliveredLog(c);
  return c.json(await log.verify(c.req.valid("query").limit), 200);
});

route("public", "GET /v1/audit/log-key", "The audit log's checkpoint verifier key", {
  description:
    "The Ed25519 key that signs every workspace's audit checkpoints, in the signed-note verifier key form `<name>+<8 hex key id>+<base64(0x01 ‖ public key)>` (one line), as golang.org/x/mod/sumdb/note reads it.",
  responses: { 200: text("The verifier key"), 503: "No signing key is configured" },
}).handle(async (c) => c.text(`${verifierKey(await auditSigner(c.env, c.req.url))}\n`, 200, { "Content-Type": TEXT }));

route("admin", "GET /v1/admin/audit/checkpoint", "The workspace audit log's latest signed checkpoint", {
  description:
    "A C2SP tlog-checkpoint as a C2SP signed note: `<origin>\\n<tree size>\\n<base64 root hash>\\n`, a blank line, then the signature line `— <key name> <base64(key id ‖ Ed25519 signature)>`, then one C2SP tlog-cosignature line `— <witness name> <base64(key id ‖ time ‖ signature)>` per configured witness (`AUDIT_WITNESSES`) that has cosigned exactly this checkpoint. The origin is `<BASE_URL host>/audit/<workspace id>`; the tree is RFC 9162's over the workspace's events in sequence order. With witnesses configured, the header `Audit-Witness-State` says `cosigned` (every witness's line is here), `pending` (a witness has not cosigned this size yet; rounds run at most once a minute) or `witness_conflict` (a witness refused a checkpoint of this log: it saw another history; an `audit.witness.conflict` event records it). The checkpoint is served in every state.",
  responses: {
    200: {
      ...text("The signed checkpoint, with the witnesses' cosignature lines"),
      headers: z.object({
        "Audit-Witness-State": z
          .enum(["cosigned", "pending", "witness_conflict"])
          .optional()
          .openapi({ description: "What the configured witnesses hold of this log (absent without witnesses)" }),
      }),
    },
    503: "No signing key is configured, or AUDIT_WITNESSES is invalid",
  },
}).handle(async (c) => {
  const workspaceId = c.var.caller.workspace.id;
  const witnesses = await configuredWitnesses(c.env);
  const log = await deliveredLog(c);
  const signer = await auditSigner(c.env, c.req.url);
  const head = await log.checkpointHead(
    witnesses.map((w) => w.verifierKey),
    Date.now(),
  );
  const body = checkpointBody(logOrigin(c.env, c.req.url, workspaceId), head.size, head.root);
  const note = await signNote(signer, body);
  if (!witnesses.length) return c.text(note, 200, { "Content-Type": TEXT });
  if (head.round_due)
    c.executionCtx.waitUntil(
      queueWitnessRound(c.env, { workspace_id: workspaceId, request_origin: new URL(c.req.url).origin }),
    );
  const { lines, state } = await cosignatures(witnesses, head, body);
  return c.text(note + lines, 200, { "Content-Type": TEXT, "Audit-Witness-State": state });
});

route("admin", "GET /v1/admin/audit/events/{seq}", "One audit event with its Merkle leaf bytes", {
  params: EventParamsSchema,
  responses: {
    200: [AuditEventWithLeafSchema, "The event and its leaf"],
    400: "Malformed sequence number",
    404: "No such event",
  },
}).handle(async (c) => {
  const log = await deliveredLog(c);
  const found = await log.eventWithLeaf(c.req.valid("param").seq);
  if (!found) throw notFound("No such audit event");
  return c.json({ ...withDetails(found.event), leaf: found.leaf }, 200);
});

route("admin", "GET /v1/admin/audit/proofs/inclusion", "RFC 9162 inclusion proof of an event", {
  description: "Proves that event `seq` (leaf index `seq - 1`) is in the tree of `size` leaves.",
  query: InclusionQuerySchema,
  responses: {
    200: [InclusionProofSchema, "The audit path"],
    400: "Malformed query, a size beyond the tree, or seq beyond size",
  },
}).handle(async (c) => {
  const { seq, size } = c.req.valid("query");
  const log = await deliveredLog(c);
  const proof = await log.inclusionProof(seq, size);
  if (!proof) throw badRequest("proof_out_of_range", `seq ${seq} in a tree of ${size} is beyond the audit log's tree`);
  return c.json(proof, 200);
});

route("admin", "GET /v1/admin/audit/proofs/consistency", "RFC 9162 consistency proof between two tree sizes", {
  description: "Proves that the tree of `from` leaves is a prefix of the tree of `to` leaves.",
  query: ConsistencyQuerySchema,
  responses: {
    200: [ConsistencyProofSchema, "The consistency proof"],
    400: "Malformed query, a size beyond the tree, or from > to",
  },
}).handle(async (c) => {
  const { from, to } = c.req.valid("query");
  const log = await deliveredLog(c);
  const proof = await log.consistencyProof(from, to);
  if (!proof)
    throw badRequest("proof_out_of_range", `from ${from} to ${to} is not within the audit log's tree (or from > to)`);
  return c.json(proof, 200);
});

export const auditRouter = route.router;
