import { uiChunks } from "../conversations/room/sse";
import type { Conversation, Message } from "../conversations/schemas";
import { createConversation } from "../conversations/service";
import { postMessage, quickAskReady } from "../conversations/turns";
import { newId } from "../platform/ids";
import type { ToolContext } from "./context";

/** Sends one progress notification (numbered from 1, always increasing). */
export type Progress = (step: number, message: string) => Promise<void>;

/** At most one "writing its reply" notification a second. */
const TEXT_PROGRESS_MS = 1_000;

/**
 * `ask_agent`: a new fast conversation of the caller's with the agent, and one turn in it. Without
 * a `progress` callback the reply is awaited. With one, the first notification names the
 * conversation (the room finishes the turn and keeps its reply even if the MCP request is
 * dropped), then the turn's stream reports the tools the agent calls and how far its reply
 * got, and the stored reply is read back with the turn's own idempotency key.
 */
export async function askAgent(
  ctx: ToolContext,
  input: { prompt: string; agent_slug?: string },
  progress: Progress | null,
  signal: AbortSignal,
): Promise<{ conversation: Conversation; reply: Message }> {
  await quickAskReady(ctx.env, ctx.caller.workspace.id);
  const conversation = await createConversation(
    ctx.env,
    ctx.caller.workspace.id,
    ctx.caller.userId,
    { mode: "fast", agent_slug: input.agent_slug },
    (created) =>
      ctx.event({
        kind: "conversation.create",
        target: `conversation:${created.id}`,
        agentId: created.agent_id,
        conversationId: created.id,
        details: { mode: created.mode, agent_slug: created.agent_slug },
      }),
  );
  const message = { content: input.prompt };
  let idempotencyKey: string | null = null;
  if (progress) {
    idempotencyKey = `mcp-${newId()}`;
    let step = 0;
    const note = (text: string) => progress(++step, text).catch(() => undefined);
    const agent = conversation.agent_slug;
    await note(`${agent} is answering in conversation ${conversation.id}, which keeps its reply`);
    const started = await postMessage(ctx.turn, conversation.id, message, { stream: true, idempotencyKey });
    if (started.kind === "stream") await follow(started.stream, agent, note, signal);
    if (signal.aborted) throw new Error("the client cancelled the call; the turn goes on in its conversation");
  }
  const turn = await postMessage(ctx.turn, conversation.id, message, { stream: false, idempotencyKey });
  if (turn.kind !== "reply") throw new Error("a turn asked for without its stream answers with its reply");
  return { conversation, reply: turn.reply };
}

/** Reads the turn's stream to its end (or until the client cancels), noting tool calls and the reply's growth. */
async function follow(
  stream: ReadableStream<Uint8Array>,
  agent: string,
  note: (text: string) => Promise<void>,
  signal: AbortSignal,
): Promise<void> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  const stop = () => void reader.cancel().catch(() => undefined);
  signal.addEventListener("abort", stop, { once: true });
  let written = 0;
  let told = 0;
  try {
    for await (const chunk of uiChunks(reader)) {
      if (chunk.type === "tool-input-start") await note(`${agent} is using ${chunk.toolName}`);
      else if (chunk.type === "text-delta") {
        written += chunk.delta.length;
        if (Date.now() - told >= TEXT_PROGRESS_MS) {
          told = Date.now();
          await note(`${agent} is writing its reply (${written} characters so far)`);
        }
      }
    }
  } finally {
    signal.removeEventListener("abort", stop);
  }
}
