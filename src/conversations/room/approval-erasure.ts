import { and, eq, isNotNull } from "drizzle-orm";
import { approvals } from "../../db/schema";
import { db } from "../../platform/db";
import { expire } from "./approval-decisions";
import { withoutReasons } from "./approval-parts";
import { messages } from "./schema";
import { messageById, type RoomDb } from "./store";

const requestedBy = (workspaceId: string, userId: string) =>
  and(eq(approvals.workspaceId, workspaceId), eq(approvals.requestedBy, userId));

const decidedBy = (workspaceId: string, userId: string) =>
  and(eq(approvals.workspaceId, workspaceId), eq(approvals.decidedBy, userId));

/**
 * Erasure: a user's approvals keep their decision but lose the user. Pending ones the user
 * asked for expire now (nobody is left to want them: their turn ends with the calls denied);
 * rows the user asked for lose the requester, rows they decided lose the decider and the
 * reason they wrote (their rooms forget it first, from `reasonsGiven`). Answers the rows
 * changed and the conversations whose turn no longer waits.
 */
export async function eraseApprovals(
  env: Env,
  workspaceId: string,
  userId: string,
): Promise<{ approvals: number; unblocked: string[] }> {
  const d = db(env);
  const mine = requestedBy(workspaceId, userId);
  const pending = await d
    .select()
    .from(approvals)
    .where(and(mine, eq(approvals.state, "pending")))
    .all();
  await expire(env, pending);
  const [requested, decided] = await d.batch([
    d.update(approvals).set({ requestedBy: null }).where(mine).returning({ id: approvals.id }),
    d
      .update(approvals)
      .set({ decidedBy: null, reason: null })
      .where(decidedBy(workspaceId, userId))
      .returning({ id: approvals.id }),
  ]);
  const touched = new Set([...requested, ...decided].map((r) => r.id));
  return { approvals: touched.size, unblocked: [...new Set(pending.map((r) => r.conversationId))] };
}

/** A reason a user gave for a decision, which the turn's stored reply also holds. */
export type GivenReason = { conversationId: string; turnId: string; approvalId: string };

/** The decisions a user gave a reason for (read before `eraseApprovals` forgets them). */
export const reasonsGiven = (env: Env, workspaceId: string, userId: string): Promise<GivenReason[]> =>
  db(env)
    .select({ conversationId: approvals.conversationId, turnId: approvals.turnId, approvalId: approvals.id })
    .from(approvals)
    .where(and(decidedBy(workspaceId, userId), isNotNull(approvals.reason)))
    .all();

/** The room's side of erasure: the reasons go from the tool parts of the turns' replies. */
export function forgetReasons(d: RoomDb, given: GivenReason[]): void {
  for (const turnId of new Set(given.map((g) => g.turnId))) {
    const message = messageById(d, turnId);
    if (!message) continue;
    const ids = new Set(given.filter((g) => g.turnId === turnId).map((g) => g.approvalId));
    d.update(messages)
      .set({ parts: withoutReasons(message.parts, ids) })
      .where(eq(messages.id, turnId))
      .run();
  }
}
