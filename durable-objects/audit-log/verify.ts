import { detailsMatch, encodeEntry, entryMatches, GENESIS_HASH } from "./chain";
import { CHAIN_CHUNK, chainRow, SELECT_CHAIN_ROWS } from "./chain-rows";
import type { VerifyResult } from "./types";

/**
 * Recomputes the last `limit` entries up to `toSeq` in ascending order. A stored hash that does
 * not match its recomputed content (or details that no longer match their digest) is a `content`
 * break; a prev_hash that is not the previous entry's hash is a `linkage` break. The entry
 * just before the window anchors the first prev_hash.
 *
 * Rows are read and hashed in chunks (two SHA-256 per entry: the part that costs), and the
 * object yields between chunks so appends are not held up behind a long verification.
 */
export async function verifyChain(sql: SqlStorage, toSeq: number, limit: number): Promise<VerifyResult> {
  const fromSeq = Math.max(1, toSeq - limit + 1);
  const anchor =
    fromSeq > 1
      ? sql.exec<{ hash: string }>("SELECT hash FROM events WHERE seq = ?", fromSeq - 1).toArray()[0]?.hash
      : GENESIS_HASH;
  let expectedPrev = anchor ?? null;
  let expectedSeq = fromSeq;
  let checked = 0;
  let first: number | null = null;
  for (let lo = fromSeq; lo <= toSeq; lo += CHAIN_CHUNK) {
    if (lo > fromSeq) await new Promise((resolve) => setTimeout(resolve, 0)); // let appends in between chunks
    // Rows are hashed as the cursor yields them: no array of the chunk, no hex built per digest.
    for (const raw of sql.exec(SELECT_CHAIN_ROWS, lo, Math.min(toSeq, lo + CHAIN_CHUNK - 1)).raw()) {
      const r = chainRow(raw);
      first ??= r.seq;
      checked += 1;
      const breakType =
        r.seq !== expectedSeq || r.prevHash !== expectedPrev
          ? "linkage"
          : (r.salt !== null && !detailsMatch(r.salt, r.details, r.detailsDigest)) ||
              !entryMatches(encodeEntry(r), r.hash)
            ? "content"
            : null;
      if (breakType)
        return { ok: false, checked, first_seq: first, last_seq: r.seq, failure_seq: r.seq, break_type: breakType };
      expectedPrev = r.hash;
      expectedSeq = r.seq + 1;
    }
  }
  const last = checked > 0 ? expectedSeq - 1 : null;
  return { ok: true, checked, first_seq: first, last_seq: last, failure_seq: null, break_type: null };
}
