import { and, desc, eq, inArray, isNull, notExists, or, type Placeholder, type SQL, sql } from "drizzle-orm";
import { type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { artifacts, conversationParticipants, conversations } from "../db/schema";
import { db, preparedFor } from "../platform/db";
import { literalLimit } from "../platform/limit";
import { forbidden, notFound } from "../platform/problem";
import { workspaceRow, workspaceRowWhere } from "../platform/workspace-rows";
import { artifactKey, type StoredArtifact } from "./store";

/** The most a list answers (the spec's cap), newest first. */
export const LIST_LIMIT = 500;

/**
 * Who may see an artifact: a participant of its conversation, or, once it is detached
 * (its conversation deleted), the user who produced it.
 */
function visibleTo(userId: string | Placeholder): SQL {
  return or(
    and(isNull(artifacts.conversationId), eq(artifacts.producerUserId, userId)),
    sql`exists (select 1 from ${conversationParticipants} where ${conversationParticipants.conversationId} = ${artifacts.conversationId} and ${conversationParticipants.userId} = ${userId})`,
  ) as SQL;
}

export type ListedArtifact = StoredArtifact & { conversationTitle: string | null };

/** The caller's visible artifacts, newest first (ids are time-ordered), at most 500. */
export async function listArtifacts(env: Env, workspaceId: string, userId: string): Promise<ListedArtifact[]> {
  const rows = await db(env)
    .select({ artifact: artifacts, conversationTitle: conversations.title })
    .from(artifacts)
    .leftJoin(conversations, eq(conversations.id, artifacts.conversationId))
    .where(and(eq(artifacts.workspaceId, workspaceId), visibleTo(userId)))
    .orderBy(desc(artifacts.id))
    .limit(literalLimit(LIST_LIMIT))
    .all();
  return rows.map((r) => ({ ...r.artifact, conversationTitle: r.conversationTitle }));
}

const visibleArtifact = preparedFor((d) =>
  d
    .select()
    .from(artifacts)
    .where(
      and(
        eq(artifacts.id, sql.placeholder("id")),
        eq(artifacts.workspaceId, sql.placeholder("workspaceId")),
        visibleTo(sql.placeholder("userId")),
      ),
    )
    .prepare(),
);

/** The artifact if this user may see it; null for unknown ids, other workspaces and invisible ones alike. */
export async function findVisibleArtifact(
  env: Env,
  workspaceId: string,
  userId: string,
  id: string,
): Promise<StoredArtifact | null> {
  return (await visibleArtifact(env).get({ id, workspaceId, userId })) ?? null;
}

/**
 * Of `ids`, those that still exist in the workspace and that the user may see, in the order
 * given. The conversations area uses it to leave deleted artifacts out of a transcript.
 */
export async function visibleArtifactIds(
  env: Env,
  workspaceId: string,
  userId: string,
  ids: readonly string[],
): Promise<string[]> {
  if (ids.length === 0) return [];
  const found = new Set<string>();
  // D1 binds at most 100 parameters per statement.
  for (let i = 0; i < ids.length; i += 90) {
    const rows = await db(env)
      .select({ id: artifacts.id })
      .from(artifacts)
      .where(
        and(eq(artifacts.workspaceId, workspaceId), inArray(artifacts.id, ids.slice(i, i + 90)), visibleTo(userId)),
      )
      .all();
    for (const r of rows) found.add(r.id);
  }
  return ids.filter((id) => found.has(id));
}

/** The conversation (its title) when the user takes part in it in this workspace: no row otherwise. */
export const participation = (env: Env, workspaceId: string, conversationId: string, userId: string) =>
  db(env)
    .select({ title: conversations.title })
    .from(conversationParticipants)
    .innerJoin(conversations, eq(conversations.id, conversationParticipants.conversationId))
    .where(
      and(
        eq(conversationParticipants.conversationId, conversationId),
        eq(conversationParticipants.userId, userId),
        eq(conversations.workspaceId, workspaceId),
      ),
    );

/** The conversation (its title) when the user takes part in it in this workspace; null otherwise. */
export async function participantConversation(
  env: Env,
  workspaceId: string,
  conversationId: string,
  userId: string,
): Promise<{ title: string | null } | null> {
  return (await participation(env, workspaceId, conversationId, userId).get()) ?? null;
}

/**
 * Deletes an artifact and its bytes. Unknown or another workspace's: 404. In the workspace
 * but the caller is not a participant of its conversation (or, detached, not its producer): 403.
 */
export async function deleteArtifact(
  env: Env,
  workspaceId: string,
  userId: string,
  id: string,
  event: (row: StoredArtifact) => AuditEventInput,
): Promise<StoredArtifact> {
  const row = await workspaceRow(env, artifacts, workspaceId, id);
  if (!row) throw notFound("No such artifact");
  if (!(await findVisibleArtifact(env, workspaceId, userId, id)))
    throw forbidden(
      "artifact_forbidden",
      "Only a participant of the artifact's conversation (or, once detached, its producer) may delete it",
    );
  const d = db(env);
  const [deleted] = await d.batch([
    d
      .delete(artifacts)
      .where(workspaceRowWhere(artifacts, workspaceId, id))
      .returning({ id: artifacts.id }),
    auditInBatch(env, event(row), { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
  ]);
  // A concurrent delete got there first: the artifact is gone either way.
  if (!deleted.length) throw notFound("No such artifact");
  await env.FILES.delete(artifactKey(workspaceId, id));
  return row;
}

/**
 * Detaches a conversation's artifacts (`conversation_id` null; they stay with their
 * producer). A statement for the caller's D1 batch, so the conversation's deletion and the
 * detaching commit together.
 */
export function detachConversationArtifacts(env: Env, workspaceId: string, conversationId: string) {
  return db(env)
    .update(artifacts)
    .set({ conversationId: null })
    .where(and(eq(artifacts.workspaceId, workspaceId), eq(artifacts.conversationId, conversationId)));
}

/**
 * Erasure step: the artifacts the user produced that are in no remaining conversation
 * (detached, or pointing at a conversation that is gone) are deleted, bytes first.
 * Those still in a conversation stay: they are part of other participants' transcript.
 */
export async function eraseArtifacts(env: Env, workspaceId: string, userId: string): Promise<{ artifacts: number }> {
  const orphaned = and(
    eq(artifacts.workspaceId, workspaceId),
    eq(artifacts.producerUserId, userId),
    or(
      isNull(artifacts.conversationId),
      notExists(
        db(env).select({ one: sql`1` }).from(conversations).where(eq(conversations.id, artifacts.conversationId)),
      ),
    ),
  );
  let count = 0;
  for (;;) {
    const batch = await db(env)
      .select({ id: artifacts.id })
      .from(artifacts)
      .where(orphaned)
      .limit(literalLimit(500))
      .all();
    if (batch.length === 0) return { artifacts: count };
    await env.FILES.delete(batch.map((r) => artifactKey(workspaceId, r.id)));
    const ids = batch.map((r) => r.id);
    for (let i = 0; i < ids.length; i += 90)
      await db(env)
        .delete(artifacts)
        .where(and(eq(artifacts.workspaceId, workspaceId), inArray(artifacts.id, ids.slice(i, i + 90))))
        .run();
    count += batch.length;
  }
}
