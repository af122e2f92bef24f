import { badRequest } from "./problem";

/**
 * The cursor of a list read newest first by (time, id): the last row's keys, opaque to the
 * client, who passes a page's `next_cursor` back as `cursor`.
 */
export const encodeCursor = (at: string, id: string) => btoa(`${at}|${id}`).replaceAll("=", "");

/** The keys of a cursor this API returned; any other is 400 `invalid_cursor`. */
export function decodeCursor(cursor: string): { at: string; id: string } {
  try {
    const [at, id] = atob(cursor).split("|");
    if (at && id && !Number.isNaN(Date.parse(at))) return { at, id };
  } catch {
    // not base64: refused below
  }
  throw badRequest("invalid_cursor", "The cursor is not one this API returned");
}
