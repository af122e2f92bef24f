import type { UIMessageChunk } from "ai";
import { uiChunks } from "../conversations/room/sse";
import { openAiErrorBody } from "../platform/openai-error";
import type { ChatCompletionChunk, Usage } from "./schemas";

export type CompletionMeta = {
  id: string;
  created: number;
  model: string;
  conversationId: string;
  includeUsage: boolean;
};

const sse = (data: unknown) => `data: ${JSON.stringify(data)}\n\n`;

/**
 * The turn as OpenAI streams a completion: a first chunk with the role, one chunk per text
 * delta, a finish chunk, the usage chunk when asked for (read once the turn is stored), then
 * `[DONE]`. A model failure is OpenAI's in-stream `{ error }` event, and the stream ends there.
 */
async function* completionEvents(
  chunks: AsyncIterable<UIMessageChunk>,
  meta: CompletionMeta,
  usage: () => Promise<Usage>,
): AsyncGenerator<string> {
  const chunk = (choices: ChatCompletionChunk["choices"], usageOf: Usage | null = null): ChatCompletionChunk => ({
    id: meta.id,
    object: "chat.completion.chunk",
    created: meta.created,
    model: meta.model,
    choices,
    ...(meta.includeUsage ? { usage: usageOf } : {}),
    conversation_id: meta.conversationId,
  });
  yield sse(chunk([{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }]));
  const toolNames = new Map<string, string>();
  const pending: { id: string; tool_name: string }[] = [];
  for await (const c of chunks) {
    if (c.type === "text-delta" && c.delta)
      yield sse(chunk([{ index: 0, delta: { content: c.delta }, finish_reason: null }]));
    else if (c.type === "tool-input-available") toolNames.set(c.toolCallId, c.toolName);
    else if (c.type === "tool-approval-request")
      pending.push({ id: c.approvalId, tool_name: toolNames.get(c.toolCallId) ?? "" });
    else if (c.type === "error") {
      yield sse(openAiErrorBody(502, "model_error", c.errorText));
      return;
    }
  }
  const finish = chunk([{ index: 0, delta: {}, finish_reason: "stop" }]);
  yield sse(pending.length ? { ...finish, pending_approvals: pending } : finish);
  if (meta.includeUsage) yield sse(chunk([], await usage()));
  yield "data: [DONE]\n\n";
}

/**
 * `room` (the turn's UI message stream) as `chat.completion.chunk` events. A client that leaves
 * only stops reading: the turn goes on in its room, stored and billed once.
 */
export function completionStream(
  room: ReadableStream<Uint8Array>,
  meta: CompletionMeta,
  usage: () => Promise<Usage>,
): ReadableStream<Uint8Array> {
  const reader = room.pipeThrough(new TextDecoderStream()).getReader();
  const events = completionEvents(uiChunks(reader), meta, usage);
  const encoder = new TextEncoder();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await events.next();
      if (!next.done) return controller.enqueue(encoder.encode(next.value));
      controller.close();
      // The room's stream ends once the turn is stored: read it to its end rather than abort it.
      while (!(await reader.read()).done);
    },
    async cancel() {
      await reader.cancel();
    },
  });
}
