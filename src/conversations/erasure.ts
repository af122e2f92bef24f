import { detachConversationApps } from "../apps/service";
import { detachConversationArtifacts } from "../artifacts/service";
import { conversationRoom } from "./room/client";

/**
 * Erasure step: the user leaves every conversation of the workspace. A conversation nobody
 * is left in goes, with its room's storage; its artifacts are detached first, so the artifacts
 * step (after this one) deletes the ones the user produced.
 */
export async function eraseParticipation(
  env: Env,
  workspaceId: string,
  userId: string,
): Promise<{ conversations_left: number }> {
  const { results } = await env.DB.prepare(
    `SELECT p.conversation_id AS id,
       NOT EXISTS (SELECT 1 FROM conversation_participants o WHERE o.conversation_id = p.conversation_id AND o.user_id <> ?2) AS alone
     FROM conversation_participants p WHERE p.workspace_id = ?1 AND p.user_id = ?2`,
  )
    .bind(workspaceId, userId)
    .all<{ id: string; alone: number }>();
  const statements = results.flatMap(({ id, alone }) => {
    if (!alone) {
      return [
        env.DB.prepare("DELETE FROM conversation_participants WHERE conversation_id = ?1 AND user_id = ?2").bind(
          id,
          userId,
        ),
      ];
    }
    const detach = detachConversationArtifacts(env, workspaceId, id).toSQL();
    const detachApps = detachConversationApps(env, workspaceId, id).toSQL();
    return [
      env.DB.prepare(detach.sql).bind(...detach.params),
      env.DB.prepare(detachApps.sql).bind(...detachApps.params),
      env.DB.prepare("DELETE FROM messages WHERE conversation_id = ?1").bind(id),
      env.DB.prepare("DELETE FROM conversation_participants WHERE conversation_id = ?1").bind(id),
      env.DB.prepare("DELETE FROM conversations WHERE id = ?1").bind(id),
    ];
  });
  if (statements.length) await env.DB.batch(statements);
  for (const { id, alone } of results) if (alone) await conversationRoom(env, id).destroy();
  return { conversations_left: results.length };
}
