import { readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import type { ToolCallSummary } from "../../runtime/turn";
import type { StoredPart } from "./schema";

type TextPart = Extract<StoredPart, { type: "text" }>;

/**
 * The assistant message's parts, as an AI SDK client builds them from the same stream. A reply
 * of steps and text alone (most turns) is built here in one pass; any other chunk (tools,
 * reasoning, errors, metadata) goes through the SDK's own reader.
 */
export async function partsOf(chunks: UIMessageChunk[]): Promise<StoredPart[]> {
  return textOnlyParts(chunks) ?? (await sdkParts(chunks));
}

/** `readUIMessageStream`'s parts for chunks of steps and text only; null for any other chunk. */
export function textOnlyParts(chunks: readonly UIMessageChunk[]): StoredPart[] | null {
  const parts: StoredPart[] = [];
  const open = new Map<string, TextPart>();
  for (const c of chunks) {
    switch (c.type) {
      case "start":
      case "finish":
        if (c.messageMetadata != null) return null;
        break;
      case "start-step":
        parts.push({ type: "step-start" });
        break;
      case "finish-step":
        break;
      case "text-start": {
        const part: TextPart = { type: "text", text: "", providerMetadata: c.providerMetadata, state: "streaming" };
        open.set(c.id, part);
        parts.push(part);
        break;
      }
      case "text-delta": {
        const part = open.get(c.id);
        if (!part) return null;
        part.text += c.delta;
        part.providerMetadata = c.providerMetadata ?? part.providerMetadata;
        break;
      }
      case "text-end": {
        const part = open.get(c.id);
        if (!part || "citations" in c) return null;
        part.state = "done";
        part.providerMetadata = c.providerMetadata ?? part.providerMetadata;
        open.delete(c.id);
        break;
      }
      default:
        return null;
    }
  }
  return parts;
}

async function sdkParts(chunks: UIMessageChunk[]): Promise<StoredPart[]> {
  const stream = new ReadableStream<UIMessageChunk>({
    start(controller) {
      for (const c of chunks) controller.enqueue(c);
      controller.close();
    },
  });
  let last: UIMessage | undefined;
  for await (const message of readUIMessageStream({ stream, onError: () => undefined })) last = message;
  return last?.parts ?? [];
}

export const textOf = (parts: StoredPart[]) =>
  parts
    .filter((p) => p.type === "text")
    .map((p) => (p as { text: string }).text)
    .join("")
    .trim();

/** The text a turn's last segment streamed (its chunks from its `start` on; a resumed turn's begin with the others'). */
export function lastSegmentText(chunks: readonly UIMessageChunk[]): string {
  const from = chunks.findLastIndex((c) => c.type === "start");
  return chunks
    .slice(Math.max(from, 0))
    .map((c) => (c.type === "text-delta" ? c.delta : ""))
    .join("")
    .trim();
}

export function toolCallsOf(parts: StoredPart[]): ToolCallSummary[] {
  return parts.flatMap((p) =>
    p.type.startsWith("tool-") && "state" in p && (p.state === "output-available" || p.state === "output-error")
      ? [{ name: p.type.slice("tool-".length), ok: p.state === "output-available" }]
      : [],
  );
}
