import { createArtifact, downloadUrl, producedEvent } from "../artifacts/store";
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

/** Stores a file a skill produced as an artifact of the turn and lists it on the assistant message. */
export async function storeProduced(
  scope: TurnScope,
  file: { name: string; contentType: string; caption: string; source: "generate_image" | "research" },
  bytes: Uint8Array,
): Promise<{ artifact_id: string; download_url: string }> {
  const row = await createArtifact(
    scope.env,
    {
      workspaceId: scope.workspaceId,
      conversationId: scope.conversationId,
      producerUserId: scope.userId,
      agentId: scope.agent.id,
      name: file.name,
      contentType: file.contentType,
      caption: file.caption.slice(0, 500),
      source: file.source,
    },
    bytes,
    producedEvent(scope),
  );
  scope.artifactIds.push(row.id);
  return { artifact_id: row.id, download_url: downloadUrl(scope.origin, row.id) };
}
