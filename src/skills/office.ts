/**
 * The text of Word (.docx) and Excel (.xlsx) files: each is a zip of XML parts (Office Open
 * XML). fflate opens the zip; the few parts that carry text are read here with a small XML
 * tokenizer, which stops once the text is past the limit the tool answers anyway.
 */
import { unzipSync } from "fflate";
import { decodeEntities as decode } from "../platform/html";
import { type Clipped, TEXT_LIMIT } from "./extract";

/** Most bytes one XML part may declare unpacked: the inflater writes no further, so a zip bomb stops here. */
export const MAX_PART_BYTES = 16 * 1024 * 1024;

export type OfficeKind = "docx" | "xlsx";
export type OfficeText = Clipped & { sheets?: number };

class Unreadable extends Error {}

type Token = { tag: string; close: boolean; empty: boolean; attrs: string } | { text: string };

/** Tags and text runs of an XML document, in order; comments and declarations are skipped (Office writes no CDATA). */
function* tokens(xml: string): Generator<Token> {
  const re = /<(\/?)([A-Za-z_][\w.:-]*)([^>]*?)(\/?)>|<[?!][^>]*>|([^<]+)/g;
  for (let m = re.exec(xml); m; m = re.exec(xml)) {
    if (m[5] !== undefined) yield { text: m[5] };
    else if (m[2] !== undefined) yield { tag: m[2], close: m[1] === "/", empty: m[4] === "/", attrs: m[3] ?? "" };
  }
}

const attr = (attrs: string, name: string) => {
  const m = new RegExp(`(?:^|\\s)${name}="([^"]*)"`).exec(attrs);
  return m ? decode(m[1]!) : undefined;
};

/** Collects text up to the limit; `full` says when to stop reading. */
class Out {
  text = "";
  constructor(private readonly limit: number) {}
  get full() {
    return this.text.length > this.limit;
  }
  add(s: string) {
    this.text += s;
  }
  done(extra: Partial<OfficeText> = {}): OfficeText {
    const text = this.text
      .replace(/[ \t]+\n/g, "\n")
      .replace(/\n{3,}/g, "\n\n")
      .trim();
    return text.length > this.limit
      ? { text: text.slice(0, this.limit), truncated: true, ...extra }
      : { text, truncated: false, ...extra };
  }
}

/** Paragraphs as lines; in a table, cells by tabs and rows by lines. Deleted revisions (w:delText) are not text. */
function docxText(xml: string, limit: number): OfficeText {
  const out = new Out(limit);
  let inText = false;
  let cellDepth = 0;
  for (const t of tokens(xml)) {
    if (out.full) break;
    if ("text" in t) {
      if (inText) out.add(decode(t.text));
      continue;
    }
    switch (t.tag) {
      case "w:t":
        inText = !t.close && !t.empty;
        break;
      case "w:tab":
        if (!t.close) out.add("\t");
        break;
      case "w:br":
      case "w:cr":
        if (!t.close) out.add(cellDepth ? " " : "\n");
        break;
      case "w:p":
        if (t.close) out.add(cellDepth ? " " : "\n");
        break;
      case "w:tc":
        if (t.close) {
          cellDepth--;
          out.text = `${out.text.trimEnd()}\t`;
        } else if (!t.empty) cellDepth++;
        break;
      case "w:tr":
        if (t.close) out.text = `${out.text.replace(/\t$/, "")}\n`;
        break;
    }
  }
  return out.done();
}

/** Shared strings: each `si` is one string, the text of its runs (`rPh`, the phonetic guide, is not). */
function sharedStrings(xml: string | undefined): string[] {
  if (!xml) return [];
  const strings: string[] = [];
  let current: string | null = null;
  let inText = false;
  let phonetic = 0;
  for (const t of tokens(xml)) {
    if ("text" in t) {
      if (inText && !phonetic && current !== null) current += decode(t.text);
      continue;
    }
    if (t.tag === "si") {
      if (t.empty) strings.push("");
      else if (t.close) strings.push(current ?? "");
      current = t.close ? null : "";
    } else if (t.tag === "rPh") phonetic += t.empty ? 0 : t.close ? -1 : 1;
    else if (t.tag === "t") inText = !t.close && !t.empty;
  }
  return strings;
}

/** "BC12" → 54 (zero-based column of a cell reference). */
function column(ref: string | undefined): number | null {
  const letters = ref?.match(/^[A-Z]+/)?.[0];
  if (!letters) return null;
  let n = 0;
  for (const c of letters) n = n * 26 + (c.charCodeAt(0) - 64);
  return n - 1;
}

const csvField = (value: string) => (/[",\n\r]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value);

/** One sheet as CSV rows, each cell at its column (empty cells kept as empty fields). */
function sheetCsv(xml: string, strings: string[], out: Out): void {
  let row: string[] | null = null;
  let cell: { col: number; type: string | undefined; value: string } | null = null;
  let inValue = false;
  for (const t of tokens(xml)) {
    if (out.full) return;
    if ("text" in t) {
      if (inValue && cell) cell.value += decode(t.text);
      continue;
    }
    if (t.tag === "row") {
      if (!t.close) row = [];
      if (t.close || t.empty) {
        if (row?.some((v) => v !== "")) out.add(`${row.map(csvField).join(",")}\n`);
        row = null;
      }
    } else if (t.tag === "c") {
      if (!t.close) cell = { col: column(attr(t.attrs, "r")) ?? row?.length ?? 0, type: attr(t.attrs, "t"), value: "" };
      if ((t.close || t.empty) && cell && row) {
        const raw = cell.value;
        const value =
          cell.type === "s" ? (strings[Number(raw)] ?? "") : cell.type === "b" ? (raw === "1" ? "TRUE" : "FALSE") : raw;
        while (row.length < cell.col) row.push("");
        row[cell.col] = value;
        cell = null;
      }
    } else if (t.tag === "v" || t.tag === "t") {
      // `v`: the value (or a shared string's index); `t`: an inline string's text (`is`).
      inValue = !t.close && !t.empty;
    }
  }
}

/** The workbook's sheets in their order, each with the zip path of its XML part. */
function sheetParts(workbook: string, rels: string | undefined): { name: string; path: string }[] {
  const targets = new Map<string, string>();
  for (const t of tokens(rels ?? "")) {
    if ("text" in t || t.tag !== "Relationship") continue;
    const id = attr(t.attrs, "Id");
    const target = attr(t.attrs, "Target");
    if (id && target) targets.set(id, target.startsWith("/") ? target.slice(1) : `xl/${target}`);
  }
  const sheets: { name: string; path: string }[] = [];
  let index = 0;
  for (const t of tokens(workbook)) {
    if ("text" in t || t.tag !== "sheet" || t.close) continue;
    index++;
    const id = attr(t.attrs, "r:id");
    sheets.push({
      name: attr(t.attrs, "name") ?? `Sheet${index}`,
      path: (id && targets.get(id)) ?? `xl/worksheets/sheet${index}.xml`,
    });
  }
  return sheets;
}

const PARTS: Record<OfficeKind, (name: string) => boolean> = {
  docx: (name) => name === "word/document.xml",
  xlsx: (name) =>
    name === "xl/workbook.xml" ||
    name === "xl/_rels/workbook.xml.rels" ||
    name === "xl/sharedStrings.xml" ||
    /^xl\/worksheets\/[^/]+\.xml$/.test(name),
};

/** The text parts of the zip, decoded; `tooLarge` names the parts left out for their size. */
function unzipParts(bytes: Uint8Array, kind: OfficeKind): { parts: Map<string, string>; tooLarge: Set<string> } {
  const tooLarge = new Set<string>();
  let files: Record<string, Uint8Array>;
  try {
    files = unzipSync(bytes, {
      filter: (f) => {
        if (!PARTS[kind](f.name)) return false;
        if (f.originalSize <= MAX_PART_BYTES) return true;
        tooLarge.add(f.name);
        return false;
      },
    });
  } catch {
    throw new Unreadable();
  }
  const utf8 = new TextDecoder();
  return { parts: new Map(Object.entries(files).map(([name, data]) => [name, utf8.decode(data)])), tooLarge };
}

const tooLargeError = (name: string) =>
  new Error(`The document's text (${name}) is larger than the ${MAX_PART_BYTES / 1024 / 1024} MiB that can be read`);

/**
 * The text of a .docx (paragraphs as lines, table cells by tabs) or of a .xlsx (each sheet as
 * CSV under a `--- Sheet: name ---` line, shared strings resolved, numbers as stored).
 * Throws an Error whose message the model can read when the file is not such a document.
 */
export function officeText(bytes: Uint8Array, kind: OfficeKind, limit = TEXT_LIMIT): OfficeText {
  const what = kind === "docx" ? "Word (.docx) document" : "Excel (.xlsx) workbook";
  try {
    const { parts, tooLarge } = unzipParts(bytes, kind);
    const main = kind === "docx" ? "word/document.xml" : "xl/workbook.xml";
    if (tooLarge.has(main)) throw tooLargeError(main);
    if (kind === "docx") {
      const document = parts.get(main);
      if (document === undefined) throw new Unreadable();
      return docxText(document, limit);
    }
    const workbook = parts.get(main);
    if (workbook === undefined) throw new Unreadable();
    if (tooLarge.has("xl/sharedStrings.xml")) throw tooLargeError("xl/sharedStrings.xml");
    const strings = sharedStrings(parts.get("xl/sharedStrings.xml"));
    const sheets = sheetParts(workbook, parts.get("xl/_rels/workbook.xml.rels"));
    const out = new Out(limit);
    for (const sheet of sheets) {
      if (out.full) break;
      out.add(`--- Sheet: ${sheet.name} ---\n`);
      const xml = parts.get(sheet.path);
      if (xml === undefined) out.add(tooLarge.has(sheet.path) ? "(too large to read)\n" : "(missing)\n");
      else sheetCsv(xml, strings, out);
      out.add("\n");
    }
    return out.done({ sheets: sheets.length });
  } catch (e) {
    if (e instanceof Unreadable) throw new Error(`The file is not a readable ${what}`);
    throw e;
  }
}
