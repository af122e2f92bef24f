import { exists, sql } from "drizzle-orm";
import { type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { artifacts } from "../db/schema";
import { db, insertSelect } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { ApiError, badRequest, notFound } from "../platform/problem";
import { MultipartError, MultipartReader } from "./multipart";
import { participation } from "./service";
import { artifactKey, putStreamed, type StoredArtifact, sanitizeName, TooLargeError } from "./store";

/** The largest file an upload takes. */
export const MAX_UPLOAD_BYTES = 25 * 1024 * 1024;
/** Room for the form's other parts and the multipart framing around the file. */
export const UPLOAD_OVERHEAD_BYTES = 64 * 1024;
export const MAX_CAPTION_CHARS = 1000;

const TOKEN = "[A-Za-z0-9!#$&^_.+-]+";
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}(\\s*;\\s*${TOKEN}=(${TOKEN}|"[^"\\\\\\r\\n]*"))*$`);

/** A stored Content-Type: the one the client declared when it is a well-formed media type, else octet-stream. */
export function storedContentType(declared: string | null | undefined): string {
  const value = declared?.trim() ?? "";
  if (value.length === 0 || value.length > 200 || !MEDIA_TYPE.test(value)) return "application/octet-stream";
  const semi = value.indexOf(";");
  return semi < 0 ? value.toLowerCase() : value.slice(0, semi).toLowerCase() + value.slice(semi);
}

const invalid = (field: string, message: string) =>
  badRequest("invalid_multipart", message, [{ path: field, message }]);

export type UploadInput = {
  workspaceId: string;
  conversationId: string;
  userId: string;
  boundary: string;
};

/**
 * Reads an upload form (`file`, optional `caption` and `sensitive`) from the request stream
 * and stores the file as an artifact of the conversation. The file's bytes go to R2 as they
 * arrive, counted: past 25 MiB the upload stops with 413 and nothing is kept. The row is
 * written once the whole form has been read, so a refused form leaves nothing behind.
 */
export async function uploadArtifact(
  env: Env,
  input: UploadInput,
  body: ReadableStream<Uint8Array>,
  event: (row: StoredArtifact) => AuditEventInput,
): Promise<StoredArtifact> {
  const reader = new MultipartReader(body, input.boundary, { maxParts: 8 });
  const id = newId();
  const key = artifactKey(input.workspaceId, id);
  const form: UploadForm = { file: null, caption: null, sensitive: false };
  try {
    await readUploadForm(env, reader, key, form);
    if (!form.file) throw invalid("file", "The form has no file part");
    const row: StoredArtifact = {
      id,
      workspaceId: input.workspaceId,
      conversationId: input.conversationId,
      producerUserId: input.userId,
      agentId: null,
      name: form.file.name,
      contentType: form.file.contentType,
      size: form.file.size,
      sha256: form.file.sha256,
      caption: form.caption,
      sensitive: form.sensitive,
      source: "upload",
      createdAt: nowIso(),
    };
    await insertUpload(env, input, row, event(row));
    return row;
  } catch (error) {
    await reader.cancel();
    if (form.file) await env.FILES.delete(key);
    if (error instanceof TooLargeError)
      throw new ApiError(413, "payload_too_large", `The file exceeds ${MAX_UPLOAD_BYTES / (1024 * 1024)} MiB`);
    if (error instanceof MultipartError) throw invalid("(body)", error.message);
    throw error;
  }
}

/** The form's fields as read so far; `file` is set once its bytes are stored (so a failure deletes them). */
type UploadForm = {
  file: { name: string; contentType: string; size: number; sha256: string } | null;
  caption: string | null;
  sensitive: boolean;
};

/** Reads the parts of the form into `form`, streaming the file to `key`; each field at most once. */
async function readUploadForm(env: Env, reader: MultipartReader, key: string, form: UploadForm): Promise<void> {
  const seen = new Set<string>();
  for (let part = await reader.nextPart(); part; part = await reader.nextPart()) {
    if (seen.has(part.name)) throw invalid(part.name, `The field ${part.name} appears twice`);
    seen.add(part.name);
    if (part.name === "file") {
      const contentType = storedContentType(part.contentType);
      const stored = await putStreamed(env, key, contentType, () => reader.readChunk(), MAX_UPLOAD_BYTES);
      form.file = { name: sanitizeName(part.filename ?? "file"), contentType, ...stored };
      if (stored.size === 0) throw invalid("file", "The file is empty");
    } else if (part.name === "caption") {
      const text = (await reader.readText(MAX_CAPTION_CHARS * 4)).trim();
      if ([...text].length > MAX_CAPTION_CHARS)
        throw invalid("caption", `The caption exceeds ${MAX_CAPTION_CHARS} characters`);
      form.caption = text === "" ? null : text;
    } else if (part.name === "sensitive") {
      const text = (await reader.readText(16)).trim().toLowerCase();
      if (text !== "true" && text !== "false") throw invalid("sensitive", "sensitive must be true or false");
      form.sensitive = text === "true";
    } else {
      throw invalid(part.name.slice(0, 100), "Unknown form field (expected file, caption, sensitive)");
    }
  }
}

/**
 * Writes the row and its event, only while the uploader still takes part in the conversation:
 * a conversation deleted (or a participant removed) during a long upload gets no dangling artifact.
 */
async function insertUpload(env: Env, input: UploadInput, row: StoredArtifact, event: AuditEventInput): Promise<void> {
  const d = db(env);
  const [inserted] = await d.batch([
    insertSelect(
      d,
      artifacts,
      row,
      sql`WHERE ${exists(participation(env, input.workspaceId, input.conversationId, input.userId))}`,
    ),
    auditInBatch(env, event, { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
  ]);
  if (inserted.meta.changes !== 1) throw notFound("No such conversation");
}
