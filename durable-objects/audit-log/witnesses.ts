import type { CheckpointHead, WitnessRecord } from "./types";

/** Witness rounds are queued at most once a minute per workspace. */
export const WITNESS_ROUND_INTERVAL_MS = 60_000;

/**
 * The tree head and what the given witnesses hold of it. With `now` (ms), `round_due` is true
 * (and the round is claimed) when a witness lacks this head and no round was queued in the last minute.
 */
export function checkpointHead(
  sql: SqlStorage,
  head: { size: number; root: string },
  witnessKeys: string[],
  now: number | null,
): CheckpointHead {
  const { size, root } = head;
  const witnesses = sql
    .exec<WitnessRecord>(
      "SELECT * FROM witnesses WHERE witness IN (SELECT value FROM json_each(?))",
      JSON.stringify(witnessKeys),
    )
    .toArray();
  const behind = witnessKeys.some((key) => {
    const w = witnesses.find((r) => r.witness === key);
    return !w || w.size !== size || w.root !== root || w.conflict_at !== null;
  });
  let roundDue = false;
  if (now !== null && size > 0 && behind) {
    const last = sql.exec<{ queued_at: number }>("SELECT queued_at FROM witness_rounds WHERE id = 1").toArray()[0];
    if (!last || now - last.queued_at >= WITNESS_ROUND_INTERVAL_MS || now < last.queued_at) {
      sql.exec("INSERT OR REPLACE INTO witness_rounds (id, queued_at) VALUES (1, ?)", now);
      roundDue = true;
    }
  }
  return { size, root, witnesses, round_due: roundDue };
}

/** A witness cosigned the checkpoint of `size` and `root`: its next add-checkpoint starts there. */
export function recordCosignature(sql: SqlStorage, witness: string, size: number, root: string, cosignature: string) {
  sql.exec(
    `INSERT INTO witnesses (witness, size, root, cosignature) VALUES (?1, ?2, ?3, ?4)
     ON CONFLICT (witness) DO UPDATE SET size = ?2, root = ?3, cosignature = ?4, conflict_size = NULL, conflict_at = NULL`,
    witness,
    size,
    root,
    cosignature,
  );
}

/** A witness refused our checkpoint (409); true when it was not refusing already (the alert is due). */
export function recordConflict(sql: SqlStorage, witness: string, size: number | null, at: string): boolean {
  const was = sql
    .exec<{ c: number | null }>("SELECT conflict_at AS c FROM witnesses WHERE witness = ?", witness)
    .toArray()[0];
  sql.exec(
    `INSERT INTO witnesses (witness, conflict_size, conflict_at) VALUES (?1, ?2, ?3)
     ON CONFLICT (witness) DO UPDATE SET conflict_size = ?2, conflict_at = coalesce(conflict_at, ?3)`,
    witness,
    size,
    at,
  );
  return !was?.c;
}
