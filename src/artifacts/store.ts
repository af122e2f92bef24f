import { artifacts } from "../db/schema";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";

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

/**
 * Stores a file the runtime or a tool produced (bytes already in memory: tool output is
 * small) as an artifact: bytes to R2 first, then the row, so a row never points at nothing.
 */
export async function createArtifact(env: Env, input: NewArtifact, bytes: Uint8Array): Promise<StoredArtifact> {
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
  await db(env).insert(artifacts).values(row).run();
  return row;
}
