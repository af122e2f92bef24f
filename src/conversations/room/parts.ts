import { readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import type { ToolCallSummary } from "../../runtime/turn";
import type { StoredPart } from "./schema";

/** The assistant message's parts, as an AI SDK client builds them from the same stream. */
export async function partsOf(chunks: UIMessageChunk[]): Promise<StoredPart[]> {
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

export function toolCallsOf(parts: StoredPart[]): ToolCallSummary[] {
  return parts.flatMap((p) =>
    p.type.startsWith("tool-") && "state" in p && (p.state === "output-available" || p.state === "output-error")
      ? [{ name: p.type.slice("tool-".length), ok: p.state === "output-available" }]
      : [],
  );
}
