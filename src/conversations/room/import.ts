import { eq } from "drizzle-orm";
import { messages as d1Messages } from "../../db/schema";
import { db } from "../../platform/db";
import { messages } from "./schema";
import { type RoomDb, setMeta } from "./store";

/**
 * A conversation from before rooms held the messages: its rows in D1 are copied into the room
 * once, on its first use (the D1 table stays until a later migration drops it).
 */
export async function importFromD1(
  env: Env,
  storage: DurableObjectStorage,
  room: RoomDb,
  conversationId: string,
  workspaceId: string,
): Promise<void> {
  const rows = await db(env)
    .select()
    .from(d1Messages)
    .where(eq(d1Messages.conversationId, conversationId))
    .orderBy(d1Messages.id);
  storage.transactionSync(() => {
    for (const r of rows) {
      room
        .insert(messages)
        .values({
          id: r.id,
          role: r.role,
          authorUserId: r.authorUserId,
          agentId: r.agentId,
          content: r.content,
          parts: [{ type: "text", text: r.content }],
          toolCalls: JSON.parse(r.toolCalls),
          artifactIds: JSON.parse(r.artifactIds),
          inputTokens: r.inputTokens,
          outputTokens: r.outputTokens,
          credits: r.credits,
          createdAt: r.createdAt,
        })
        .onConflictDoNothing()
        .run();
    }
    rememberConversation(room, conversationId, workspaceId);
  });
}

/**
 * The room's conversation, stored (in the caller's transaction) once its messages are in the
 * room: copied from D1, or none to copy.
 */
export function rememberConversation(room: RoomDb, conversationId: string, workspaceId: string): void {
  setMeta(room, "conversation_id", conversationId);
  setMeta(room, "workspace_id", workspaceId);
}
