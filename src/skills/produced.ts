import { storeTurnFile, type TurnFile } from "../artifacts/store";
import type { TurnScope } from "../platform/turn-tools";

/** A short file-name stem from free text: `"A red fox, at dusk"` → `a-red-fox-at-dusk`. */
export function nameStem(text: string, fallback: string): string {
  const stem = text
    .toLowerCase()
    .normalize("NFKD")
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 48)
    .replace(/-+$/, "");
  return stem || fallback;
}

/** Stores a file a skill produced as an artifact of the turn (its caption clipped to 500 characters). */
export const storeProduced = (scope: TurnScope, file: TurnFile & { caption: string }, bytes: Uint8Array) =>
  storeTurnFile(scope, { ...file, caption: file.caption.slice(0, 500) }, bytes);
