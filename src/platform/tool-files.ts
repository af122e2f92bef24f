import { z } from "zod";

/** The content of a file a model hands a tool (text, or base64 for binary), as a tool input's fields. */
export const fileContentFields = {
  content: z.string().describe("The file's content: text, or base64 when encoding is base64"),
  encoding: z.enum(["utf8", "base64"]).optional().describe("How content is encoded; utf8 by default"),
};

/**
 * The bytes of base64 content (white space and a `data:` prefix allowed). Over `maxBytes` is
 * `fail.tooLarge()`, checked before decoding so an oversized payload is never allocated;
 * malformed base64 is `fail.invalid(message)`.
 */
export function decodeBase64(
  content: string,
  maxBytes: number,
  fail: { tooLarge: () => Error; invalid: (message: string) => Error },
): Uint8Array {
  const clean = content.replace(/\s+/g, "").replace(/^data:[^,]*;base64,/, "");
  if (Math.floor((clean.length * 3) / 4) > maxBytes + 2) throw fail.tooLarge();
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(clean) || clean.length % 4 === 1)
    throw fail.invalid("content is not valid base64");
  const bin = atob(clean);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
