import { createHash } from "node:crypto";
import { type AuditEventInput, auditInBatch } from "../audit/events";
import { artifacts } from "../db/schema";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import type { TurnScope } from "../platform/turn-tools";

export type ArtifactSource = "upload" | "deliver_file" | "generate_image" | "research";

export type NewArtifact = {
  workspaceId: string;
  conversationId: string | null;
  producerUserId: string | null;
  agentId?: string | null;
  /** The file name as the user or the model gave it; sanitised here. */
  name: string;
  contentType: string;
  caption?: string | null;
  sensitive?: boolean;
  source: ArtifactSource;
};

export type StoredArtifact = typeof artifacts.$inferSelect;

/** Bytes live under a key that carries no user text: only ids. */
export const artifactKey = (workspaceId: string, id: string) => `artifacts/${workspaceId}/${id}`;

export const downloadUrl = (origin: string, id: string) => `${origin}/v1/api/artifacts/${id}/download`;

/** A file name safe to store and to show: no path, no control characters, at most 200 characters. */
export function sanitizeName(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? "";
  const clean = base
    .replace(/[\u0000-\u001f\u007f]/g, "")
    .trim()
    .slice(0, 200);
  return clean === "" || clean === "." || clean === ".." ? "file" : clean;
}

async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The event of an artifact a turn produced (a tool's or a skill's file), on behalf of the turn's user. */
const producedEvent =
  (scope: Pick<TurnScope, "workspaceId" | "userId" | "agent" | "conversationId">) =>
  (row: StoredArtifact): AuditEventInput => ({
    workspaceId: scope.workspaceId,
    kind: "artifact.create",
    intent: row.source,
    actor: { kind: "user", id: scope.userId },
    agentId: scope.agent.id,
    conversationId: scope.conversationId,
    target: `artifact:${row.id}`,
    details: { source: row.source, content_type: row.contentType, size: row.size, sensitive: row.sensitive },
  });

/**
 * Stores a file the runtime or a tool produced (bytes already in memory: tool output is
 * small) as an artifact: bytes to R2 first, then the row, so a row never points at nothing.
 */
export async function createArtifact(
  env: Env,
  input: NewArtifact,
  bytes: Uint8Array,
  event: (row: StoredArtifact) => AuditEventInput,
): Promise<StoredArtifact> {
  const row: StoredArtifact = {
    id: newId(),
    workspaceId: input.workspaceId,
    conversationId: input.conversationId,
    producerUserId: input.producerUserId,
    agentId: input.agentId ?? null,
    name: sanitizeName(input.name),
    contentType: input.contentType,
    size: bytes.byteLength,
    sha256: await sha256Hex(bytes),
    caption: input.caption ?? null,
    sensitive: input.sensitive ?? false,
    source: input.source,
    createdAt: nowIso(),
  };
  await env.FILES.put(artifactKey(row.workspaceId, row.id), bytes, {
    httpMetadata: { contentType: row.contentType },
    sha256: row.sha256,
  });
  const d = db(env);
  await d.batch([d.insert(artifacts).values(row), auditInBatch(env, event(row))]);
  return row;
}

/** A file a turn produced (a tool's or a skill's). */
export type TurnFile = Pick<NewArtifact, "name" | "contentType" | "caption" | "sensitive" | "source">;

/**
 * Stores a file the turn produced as an artifact of its conversation, by the turn's user, and
 * lists it on the assistant message; its event is delivered with the turn's own when it ends.
 */
export async function storeTurnFile(scope: TurnScope, file: TurnFile, bytes: Uint8Array) {
  const producer = {
    workspaceId: scope.workspaceId,
    conversationId: scope.conversationId,
    producerUserId: scope.userId,
  };
  const row = await createArtifact(
    scope.env,
    { ...producer, agentId: scope.agent.id, ...file },
    bytes,
    producedEvent(scope),
  );
  scope.artifactIds.push(row.id);
  return { artifact_id: row.id, download_url: downloadUrl(scope.origin, row.id) };
}

/** R2's smallest multipart part (every part but the last must be this size exactly). */
export const R2_PART_BYTES = 5 * 1024 * 1024;

/** A file that grew past the limit while it streamed in. */
export class TooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`The file exceeds ${maxBytes} bytes`);
  }
}

export type StreamedBytes = { size: number; sha256: string };

/**
 * Writes bytes that arrive in chunks (`next()` answers null at the end) to R2 under `key`,
 * counting and hashing them on the way. At most one R2 part (5 MiB) is held at a time: a
 * file that fits one part is one `put`, a larger one an R2 multipart upload of 5 MiB parts.
 * Past `maxBytes` the upload is aborted and `TooLargeError` thrown, before the rest is read.
 */
export async function putStreamed(
  env: Env,
  key: string,
  contentType: string,
  next: () => Promise<Uint8Array | null>,
  maxBytes: number,
): Promise<StreamedBytes> {
  const hash = createHash("sha256");
  const httpMetadata = { contentType };
  let part = new Uint8Array(0);
  let filled = 0;
  let size = 0;
  let upload: R2MultipartUpload | null = null;
  const uploaded: R2UploadedPart[] = [];
  try {
    for (let chunk = await next(); chunk; chunk = await next()) {
      size += chunk.length;
      if (size > maxBytes) throw new TooLargeError(maxBytes);
      hash.update(chunk);
      let offset = 0;
      while (offset < chunk.length) {
        if (part.length === 0) part = new Uint8Array(Math.min(R2_PART_BYTES, Math.max(chunk.length, 64 * 1024)));
        if (filled === part.length && part.length < R2_PART_BYTES) {
          // Grow the first buffer up to one part; small files never allocate 5 MiB.
          const grown = new Uint8Array(Math.min(R2_PART_BYTES, part.length * 2));
          grown.set(part);
          part = grown;
        }
        const n = Math.min(part.length - filled, chunk.length - offset);
        part.set(chunk.subarray(offset, offset + n), filled);
        filled += n;
        offset += n;
        if (filled === R2_PART_BYTES) {
          upload ??= await env.FILES.createMultipartUpload(key, { httpMetadata });
          uploaded.push(await upload.uploadPart(uploaded.length + 1, part));
          part = new Uint8Array(R2_PART_BYTES);
          filled = 0;
        }
      }
    }
    const sha256 = hash.digest("hex");
    if (!upload) await env.FILES.put(key, part.subarray(0, filled), { httpMetadata, sha256 });
    else {
      if (filled > 0) uploaded.push(await upload.uploadPart(uploaded.length + 1, part.subarray(0, filled)));
      await upload.complete(uploaded);
    }
    return { size, sha256 };
  } catch (error) {
    await upload?.abort().catch(() => undefined);
    throw error;
  }
}
