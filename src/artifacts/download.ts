/**
 * `attachment; filename="<ascii>"; filename*=UTF-8''<encoded>` (RFC 6266, RFC 8187): the
 * ASCII fallback replaces what an old client could misread, the extended form keeps the name.
 */
export function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\%]/g, "_");
  const encoded = encodeURIComponent(name).replace(
    /['()*]/g,
    (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

export type ByteRange = { offset: number; length: number };

/**
 * One `bytes=` range of RFC 9110 §14.1.2 against a file of `size` bytes. A header this does
 * not take (several ranges, another unit, a malformed one) is ignored: the whole file is
 * served, as the RFC allows. A range that starts past the end is unsatisfiable (416).
 */
export function parseRange(header: string, size: number): ByteRange | "unsatisfiable" | null {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return null;
  if (m[1] === "") {
    const suffix = Number(m[2]);
    if (suffix === 0) return "unsatisfiable";
    const length = Math.min(suffix, size);
    return { offset: size - length, length };
  }
  const start = Number(m[1]);
  if (start >= size) return "unsatisfiable";
  const end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (end < start) return null;
  return { offset: start, length: end - start + 1 };
}
