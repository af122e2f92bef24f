import { z } from "@hono/zod-openapi";
import { idPathParams } from "../http/params";
import type { ListedArtifact } from "./service";
import { downloadUrl, type StoredArtifact } from "./store";

export const ArtifactIdParamsSchema = idPathParams("The artifact id");

export const ConversationIdParamsSchema = idPathParams("The conversation id");

export const ArtifactSchema = z
  .object({
    id: z.uuid(),
    conversation_id: z.uuid().nullable().openapi({ description: "The originating conversation; null once detached" }),
    conversation_title: z
      .string()
      .nullable()
      .openapi({ description: "The originating conversation's title; null once detached or untitled" }),
    name: z.string().openapi({ example: "report.pdf" }),
    content_type: z.string().openapi({ example: "application/pdf" }),
    size: z.number().int().nonnegative().openapi({ description: "Bytes" }),
    caption: z.string().nullable(),
    sensitive: z.boolean().openapi({ description: "Marked sensitive: never delivered to a team-chat channel" }),
    source: z
      .enum(["upload", "deliver_file", "generate_image", "research"])
      .openapi({ description: "What produced it: an upload, or an agent's tool" }),
    download_url: z.url(),
    created_at: z.string(),
  })
  .strict()
  .openapi("Artifact");
export type Artifact = z.infer<typeof ArtifactSchema>;

export const ArtifactListSchema = z
  .object({ artifacts: z.array(ArtifactSchema).openapi({ description: "Newest first, at most 500" }) })
  .strict()
  .openapi("ArtifactList");

export const ArtifactDeletedSchema = z
  .object({ id: z.uuid(), deleted: z.literal(true) })
  .strict()
  .openapi("ArtifactDeleted");

/** The upload form, for the document; the route reads the multipart stream itself. */
export const ArtifactUploadFormSchema = z
  .object({
    file: z
      .string()
      .openapi({ format: "binary", description: "The file: at most 25 MiB; its part's Content-Type is stored" }),
    caption: z.string().max(1000).optional().openapi({ description: "At most 1000 characters" }),
    sensitive: z.enum(["true", "false"]).optional().openapi({ description: "`true` marks the file sensitive" }),
  })
  .strict()
  .openapi("ArtifactUploadForm");

const SOURCES = new Set<string>(["upload", "deliver_file", "generate_image", "research"]);

export function toArtifact(origin: string, row: StoredArtifact | ListedArtifact): Artifact {
  return {
    id: row.id,
    conversation_id: row.conversationId,
    conversation_title: "conversationTitle" in row ? row.conversationTitle : null,
    name: row.name,
    content_type: row.contentType,
    size: row.size,
    caption: row.caption,
    sensitive: row.sensitive,
    source: (SOURCES.has(row.source) ? row.source : "upload") as Artifact["source"],
    download_url: downloadUrl(origin, row.id),
    created_at: row.createdAt,
  };
}
