import type { ChainFields } from "./chain";

/** The hashed columns of the chain, in `chainRow`'s order. */
export const SELECT_CHAIN_ROWS = `SELECT seq, occurred_at, kind, outcome, actor_kind, actor_id, agent_id, conversation_id,
  target, intent, details, salt, details_digest, prev_hash, hash FROM events WHERE seq >= ? AND seq <= ? ORDER BY seq`;
/** Rows read (and hashed) per query when the chain is walked. */
export const CHAIN_CHUNK = 10_000;

export type ChainRow = ChainFields & { details: string; salt: string | null; hash: string };

// Raw rows (arrays) are read: building an object per row costs about as much as reading it.
export const chainRow = (r: SqlStorageValue[]): ChainRow => ({
  seq: r[0] as number,
  occurredAt: r[1] as string,
  kind: r[2] as string,
  outcome: r[3] as string,
  actorKind: r[4] as string,
  actorId: r[5] as string | null,
  agentId: r[6] as string | null,
  conversationId: r[7] as string | null,
  target: r[8] as string,
  intent: r[9] as string,
  details: r[10] as string,
  salt: r[11] as string | null,
  detailsDigest: r[12] as string,
  prevHash: r[13] as string,
  hash: r[14] as string,
});
