/** The AuditLog object's RPC shapes, shared by the object and its typed client in src/audit. */
/** JSON data, as stored in event details (and serializable over RPC). */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export type AuditOutcome = "success" | "denied" | "error";
export type ActorKind = "user" | "token" | "oauth_client" | "system";

export type AppendEvent = {
  kind: string;
  outcome: AuditOutcome;
  actorKind: ActorKind;
  actorId: string | null;
  agentId: string | null;
  conversationId: string | null;
  /** Ids and verbs only: hashed in the clear, never redacted. */
  target: string;
  intent: string;
  /** The user the event is about, so erasure can find it. */
  subjectUserId: string | null;
  /** Already reduced to the kind's allow-list by the caller. */
  details: JsonObject;
  /** When the event happened, if not now (an event delivered late from the outbox). */
  occurredAt?: string;
  /** The outbox row it was delivered from; a second delivery of the same row is skipped. */
  outboxId?: string;
};

export type AuditEvent = {
  seq: number;
  id: string;
  occurred_at: string;
  kind: string;
  outcome: AuditOutcome;
  actor_kind: ActorKind;
  actor_id: string | null;
  agent_id: string | null;
  conversation_id: string | null;
  target: string;
  intent: string;
  /** Canonical JSON text of the details (parsed by the Worker; keeps RPC types flat). */
  details: string;
  details_digest: string;
  prev_hash: string;
  hash: string;
};

export type ListFilters = {
  /** Lookback in days; 0 or less means all time. */
  days: number;
  kind?: string;
  outcome?: string;
  actorKind?: string;
  agentId?: string;
  conversationId?: string;
  /** Case-insensitive substring of target or intent. */
  q?: string;
};

export type ListPage = { page: number; pageSize: number };
export type ListResult = { events: AuditEvent[]; total: number };

export type VerifyResult = {
  ok: boolean;
  checked: number;
  first_seq: number | null;
  last_seq: number | null;
  failure_seq: number | null;
  break_type: "content" | "linkage" | null;
};

/** RFC 9162 proofs; hashes base64, in the RFC's order. */
export type InclusionProof = { leaf_index: number; tree_size: number; hashes: string[] };
export type ConsistencyProof = { from: number; to: number; hashes: string[] };

/** What a witness (named by its verifier key) holds of the log: its latest cosignature, or its refusal. */
export type WitnessRecord = {
  witness: string;
  size: number;
  root: string | null;
  cosignature: string | null;
  conflict_size: number | null;
  conflict_at: string | null;
};

/** The tree head for a checkpoint, what the witnesses hold, and whether a witness round is due now. */
export type CheckpointHead = { size: number; root: string; witnesses: WitnessRecord[]; round_due: boolean };
