import type { UIMessageChunk } from "ai";

/** Where a client left a turn's stream: `<turn_id>:<seq>` (an SSE `id:` line, sent back as `Last-Event-ID`). */
export type StreamPosition = { turnId: string; seq: number };

const POSITION = /^([A-Za-z0-9_-]{1,128}):(\d{1,9})$/;

/** Parses `<turn_id>:<seq>`; null when it is not one. */
export function parsePosition(value: string): StreamPosition | null {
  const m = POSITION.exec(value.trim());
  return m ? { turnId: m[1]!, seq: Number(m[2]) } : null;
}

const encoder = new TextEncoder();

/** One event of the AI SDK UI message stream (its chunk's JSON text), with its position as the SSE id. */
export const sseEvent = (turnId: string, seq: number, json: string) =>
  encoder.encode(`id: ${turnId}:${seq}\ndata: ${json}\n\n`);

/** The stream's end, as the AI SDK writes it. */
export const SSE_DONE = encoder.encode("data: [DONE]\n\n");

/** The headers of a UI message stream response. */
export const UI_STREAM_HEADERS = {
  "Content-Type": "text/event-stream",
  "Cache-Control": "no-cache",
  "x-vercel-ai-ui-message-stream": "v1",
  "x-accel-buffering": "no",
} as const;

/** A turn's stream as the response a client reads. */
export const uiStreamResponse = (stream: ReadableStream<Uint8Array>) =>
  new Response(stream, { headers: UI_STREAM_HEADERS });

/** The events of a UI message stream as the room sends them (`id: …\ndata: <chunk>\n\n`), parsed; ends at `[DONE]`. */
export async function* uiChunks(reader: ReadableStreamDefaultReader<string>): AsyncGenerator<UIMessageChunk> {
  let buffer = "";
  for (;;) {
    for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
      const data = buffer
        .slice(0, end)
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).trimStart())
        .join("\n");
      buffer = buffer.slice(end + 2);
      if (data === "[DONE]") return;
      if (data) yield JSON.parse(data) as UIMessageChunk;
    }
    const read = await reader.read();
    if (read.done) return;
    buffer += read.value;
  }
}
