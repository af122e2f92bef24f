import { tool } from "ai";
import { z } from "zod";
import { mediaTypeOf } from "../platform/media-types";
import { decodeBase64, fileContentFields } from "../platform/tool-files";
import type { ToolProvider, TurnScope } from "../platform/turn-tools";
import { storeTurnFile } from "./store";
import { storedContentType } from "./upload";

/** The largest file one `deliver_file` call writes (decoded bytes). */
export const DELIVER_MAX_BYTES = 10 * 1024 * 1024;

export const DeliverFileInputSchema = z
  .object({
    name: z.string().min(1).max(200).describe("File name with extension, e.g. report.md"),
    ...fileContentFields,
    content_type: z
      .string()
      .max(200)
      .optional()
      .describe("Media type, e.g. text/markdown; guessed from the name when absent"),
    caption: z.string().max(1000).optional().describe("A short caption shown with the file"),
    sensitive: z.boolean().optional().describe("Mark the file sensitive (never shared to team chat)"),
  })
  .strict();
export type DeliverFileInput = z.infer<typeof DeliverFileInputSchema>;

function contentTypeFor(input: DeliverFileInput): string {
  if (input.content_type) return storedContentType(input.content_type);
  return (
    mediaTypeOf(input.name) ?? (input.encoding === "base64" ? "application/octet-stream" : "text/plain; charset=utf-8")
  );
}

const tooLarge = () => new Error(`the file exceeds ${DELIVER_MAX_BYTES / (1024 * 1024)} MiB; deliver a smaller file`);

/** The bytes `deliver_file` would write, or an Error the model sees as the tool's result. */
export function deliverBytes(input: DeliverFileInput): Uint8Array {
  if (input.encoding === "base64") {
    const bytes = decodeBase64(input.content, DELIVER_MAX_BYTES, {
      tooLarge,
      invalid: (message) => new Error(message),
    });
    if (bytes.length > DELIVER_MAX_BYTES) throw tooLarge();
    if (bytes.length === 0) throw new Error("content is empty");
    return bytes;
  }
  if (input.content.length > DELIVER_MAX_BYTES) throw tooLarge();
  const bytes = new TextEncoder().encode(input.content);
  if (bytes.length > DELIVER_MAX_BYTES) throw tooLarge();
  if (bytes.length === 0) throw new Error("content is empty");
  return bytes;
}

/** Writes one file of the turn as an artifact of its conversation, produced by the turn's user. */
export async function deliverFile(scope: TurnScope, input: DeliverFileInput) {
  const file = {
    name: input.name,
    contentType: contentTypeFor(input),
    caption: input.caption?.trim() || null,
    sensitive: input.sensitive ?? false,
    source: "deliver_file" as const,
  };
  return storeTurnFile(scope, file, deliverBytes(input));
}

/** The artifacts area's tools for a turn: `deliver_file`. */
export const artifactTools: ToolProvider = async (scope) => ({
  tools: {
    deliver_file: tool({
      description:
        "Deliver a file to the user as a downloadable artifact of this conversation (text, or base64 for binary; at most 10 MiB). " +
        "Answers the artifact id and its download URL.",
      inputSchema: DeliverFileInputSchema,
      execute: (input) => deliverFile(scope, input),
    }),
  },
});
