import { type TextStreamPart, type ToolSet, toUIMessageChunk, type UIMessageChunk } from "ai";

/**
 * Maps streamText's parts to the UI message chunks `toUIMessageStream` would send (the reply's
 * id on `start`, a tool call the model got wrong sent once), one part at a time: the room reads
 * `result.stream` itself instead of through that method's five stream layers, which cost a
 * turn more CPU than the rest of its streaming.
 */
export function uiChunkMapper(
  tools: ToolSet,
  options: { messageId: string; onError: (error: unknown) => string },
): (part: TextStreamPart<ToolSet>) => UIMessageChunk | undefined {
  const invalidCalls = new Set<string>();
  return (part) => {
    if (part.type === "tool-call" && part.invalid) invalidCalls.add(part.toolCallId);
    // The invalid call's own chunk already says what was wrong with it.
    if (part.type === "tool-error" && !part.providerExecuted && invalidCalls.delete(part.toolCallId)) return undefined;
    return toUIMessageChunk(part, {
      tools,
      onError: options.onError,
      redactToolErrors: false,
      responseMessageId: options.messageId,
    });
  };
}
