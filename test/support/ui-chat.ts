/** The AI SDK's client side of a chat, as `useChat` drives it: what it sends and the reply its chunks build. */
import { type DefaultChatTransport, readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";

export const userMessage = (id: string, text: string): UIMessage => ({
  id,
  role: "user",
  parts: [{ type: "text", text }],
});

/** Sends `messages` in the chat; with `regenerate`, asks for that reply again. */
export const sendChat = (
  transport: DefaultChatTransport<UIMessage>,
  chatId: string,
  messages: UIMessage[],
  regenerate?: string,
) =>
  transport.sendMessages({
    chatId,
    messages,
    trigger: regenerate ? "regenerate-message" : "submit-message",
    messageId: regenerate,
    abortSignal: undefined,
  });

/** The assistant message the chunks build, as `useChat` would show it. */
export async function replyOf(stream: ReadableStream<UIMessageChunk>): Promise<UIMessage> {
  let last: UIMessage | undefined;
  for await (const message of readUIMessageStream({ stream })) last = message;
  return last!;
}

export const textOf = (m: UIMessage) =>
  m.parts
    .filter((p) => p.type === "text")
    .map((p) => p.text)
    .join("");

/** The UI message stream chunks of an SSE body, up to `[DONE]`. */
export const uiChunksOf = (sse: string): UIMessageChunk[] =>
  sse
    .split("\n\n")
    .map((block) =>
      block
        .split("\n")
        .find((l) => l.startsWith("data: "))
        ?.slice(6),
    )
    .filter((data): data is string => !!data && data !== "[DONE]")
    .map((data) => JSON.parse(data) as UIMessageChunk);
