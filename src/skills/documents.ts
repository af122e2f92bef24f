import { and, eq } from "drizzle-orm";
import { artifactKey } from "../artifacts/store";
import { artifacts } from "../db/schema";
import { db } from "../platform/db";
import { workspaceRowWhere } from "../platform/workspace-rows";
import { clip, htmlMainText } from "./extract";

/** Biggest PDF, Word or Excel file opened in memory. */
export const MAX_PARSED_BYTES = 10 * 1024 * 1024;
/** Most bytes of a text file decoded (its start, when larger). */
export const MAX_TEXT_BYTES = 2 * 1024 * 1024;

export type DocumentKind = "text" | "html" | "pdf" | "docx" | "xlsx";

/** What read_document reads, for the tool's error when a file is none of these. */
export const READABLE = "text, Markdown, CSV, JSON, HTML, PDF, Word (.docx) and Excel (.xlsx) files";

export type DocumentReading = {
  artifact_id: string;
  name: string;
  content_type: string;
  content: string;
  truncated: boolean;
  pages?: number;
  sheets?: number;
};

const BY_EXTENSION: Record<string, DocumentKind> = {
  txt: "text",
  md: "text",
  markdown: "text",
  csv: "text",
  tsv: "text",
  json: "text",
  html: "html",
  htm: "html",
  pdf: "pdf",
  docx: "docx",
  xlsx: "xlsx",
};

const OFFICE_TYPES: Record<string, DocumentKind> = {
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
};

/** What a file is, by its content type, else by its name; null for what this tool does not read. */
export function documentKind(contentType: string, name: string): DocumentKind | null {
  const type = contentType.toLowerCase().split(";")[0]!.trim();
  const byExtension = BY_EXTENSION[name.toLowerCase().split(".").pop() ?? ""] ?? null;
  if (type === "application/pdf") return "pdf";
  if (OFFICE_TYPES[type]) return OFFICE_TYPES[type];
  if (type === "text/html" || type === "application/xhtml+xml") return "html";
  if (type.startsWith("text/") || type === "application/json" || type.endsWith("+json")) return "text";
  if (type === "application/octet-stream" || type === "") return byExtension;
  // Some clients label a .docx or .xlsx by its container.
  if (type === "application/zip" || type === "application/x-zip-compressed") {
    return byExtension === "docx" || byExtension === "xlsx" ? byExtension : null;
  }
  return null;
}

/**
 * The text of a PDF, page by page, from the PDF reader Worker (`workers/pdf-reader`, PDF.js)
 * through the `PDF_READER` service binding: PDF.js stays out of this Worker's start-up.
 */
export async function pdfText(env: Env, bytes: Uint8Array): Promise<{ text: string; pages: number }> {
  const read = await env.PDF_READER.text(bytes);
  if ("error" in read) throw new Error(read.error);
  return read;
}

async function readStart(body: ReadableStream<Uint8Array>, max: number): Promise<{ bytes: Uint8Array; cut: boolean }> {
  const reader = body.getReader();
  const out = new Uint8Array(max);
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return { bytes: out.subarray(0, size), cut: false };
    const room = max - size;
    out.set(value.subarray(0, room), size);
    size += Math.min(room, value.byteLength);
    if (value.byteLength > room) {
      await reader.cancel();
      return { bytes: out, cut: true };
    }
  }
}

/**
 * Reads an artifact of the conversation (in the caller's workspace) as text: text, Markdown,
 * CSV and JSON as they are, HTML by its main text, PDF by its pages' text, Word by its
 * paragraphs and tables, Excel by each sheet as CSV.
 */
export async function readDocument(
  env: Env,
  scope: { workspaceId: string; conversationId: string | null },
  artifactId: string,
): Promise<DocumentReading> {
  const missing = new Error(`No artifact ${artifactId} in this conversation`);
  if (!scope.conversationId) throw missing;
  const [row] = await db(env)
    .select()
    .from(artifacts)
    .where(
      and(
        workspaceRowWhere(artifacts, scope.workspaceId, artifactId),
        eq(artifacts.conversationId, scope.conversationId),
      ),
    );
  if (!row) throw missing;
  const kind = documentKind(row.contentType, row.name);
  if (!kind) {
    throw new Error(`read_document reads ${READABLE}; ${row.name} is ${row.contentType}`);
  }
  if ((kind === "pdf" || kind === "docx" || kind === "xlsx") && row.size > MAX_PARSED_BYTES) {
    const what = kind === "pdf" ? "a PDF" : kind === "docx" ? "a Word document" : "an Excel workbook";
    throw new Error(`${row.name} is larger than the ${MAX_PARSED_BYTES / 1024 / 1024} MiB ${what} may have to be read`);
  }
  const object = await env.FILES.get(artifactKey(row.workspaceId, row.id));
  if (!object) throw new Error(`The bytes of ${row.name} are missing`);
  const base = { artifact_id: row.id, name: row.name, content_type: row.contentType };

  if (kind === "pdf") {
    const { text, pages } = await pdfText(env, new Uint8Array(await object.arrayBuffer()));
    if (!text.replace(/--- Page \d+ ---/g, "").trim()) {
      throw new Error(`${row.name} has no text layer (a scanned PDF?); nothing to read`);
    }
    const clipped = clip(text);
    return { ...base, content: clipped.text, truncated: clipped.truncated, pages };
  }
  if (kind === "docx" || kind === "xlsx") {
    // Loaded on first use: the zip reader stays out of the Worker's start-up.
    const { officeText } = await import("./office");
    const read = officeText(new Uint8Array(await object.arrayBuffer()), kind);
    if (!read.text) throw new Error(`${row.name} has no text to read`);
    return { ...base, content: read.text, truncated: read.truncated, ...(read.sheets ? { sheets: read.sheets } : {}) };
  }
  const { bytes, cut } = await readStart(object.body, MAX_TEXT_BYTES);
  const decoded = new TextDecoder().decode(bytes);
  const clipped = kind === "html" ? await htmlMainText(decoded) : clip(decoded);
  return { ...base, content: clipped.text, truncated: clipped.truncated || cut };
}
