import { and, eq, ne, notExists } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import { conversationParticipants } from "../db/schema";
import { db } from "../platform/db";
import { forgetConversation, forgetUser } from "./participants";
import { eraseApprovals, reasonsGiven } from "./room/approval-erasure";
import { conversationRoom } from "./room/client";
import { deletionQueries } from "./service";

/**
 * Erasure step: the user leaves every conversation of the workspace. A conversation nobody
 * is left in goes, with its room's storage and approvals; its artifacts are detached first, so
 * the artifacts step (after this one) deletes the ones the user produced. In the others, the
 * user's live sockets close, the user's approvals lose the user (see `eraseApprovals`), and a
 * turn that waited for the user's approvals ends before the next steps run.
 */
export async function eraseParticipation(
  env: Env,
  workspaceId: string,
  userId: string,
): Promise<{ conversations_left: number; approvals_anonymized: number }> {
  const d = db(env);
  const p = conversationParticipants;
  const other = alias(conversationParticipants, "other");
  const others = d
    .select({ userId: other.userId })
    .from(other)
    .where(and(eq(other.conversationId, p.conversationId), ne(other.userId, userId)));
  const results = await d
    .select({ id: p.conversationId, alone: notExists(others).mapWith(Boolean) })
    .from(p)
    .where(and(eq(p.workspaceId, workspaceId), eq(p.userId, userId)));
  const queries = results.flatMap(({ id, alone }) =>
    alone
      ? deletionQueries(env, workspaceId, id)
      : [d.delete(p).where(and(eq(p.conversationId, id), eq(p.userId, userId)))],
  );
  if (queries.length) await d.batch(queries as unknown as Parameters<typeof d.batch>[0]);
  forgetUser(workspaceId, userId);
  for (const { id, alone } of results) if (alone) forgetConversation(id);
  for (const { id, alone } of results)
    await (alone ? conversationRoom(env, id).destroy() : conversationRoom(env, id).closeLiveOf(userId));
  // The rooms first, so a retry after a failure still finds the reasons to forget.
  const reasons = await reasonsGiven(env, workspaceId, userId);
  for (const id of new Set(reasons.map((r) => r.conversationId)))
    await conversationRoom(env, id).forgetReasons(
      id,
      workspaceId,
      reasons.filter((r) => r.conversationId === id),
    );
  const { approvals, unblocked } = await eraseApprovals(env, workspaceId, userId);
  for (const id of unblocked) await conversationRoom(env, id).resumeWaiting(id, workspaceId);
  return { conversations_left: results.length, approvals_anonymized: approvals };
}
