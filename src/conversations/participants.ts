/**
 * Per isolate, for a few seconds: who was found to take part in which conversation. A client
 * that lost a turn's stream reconnects right after the request that started it, and its resume
 * then skips the participant read. A deletion or an erasure in this isolate forgets at once;
 * another isolate's entries expire within `PARTICIPANT_TTL_MS` (the room's storage is gone by
 * then, so such a resume finds nothing to stream). A cache, safe to lose.
 */
export const PARTICIPANT_TTL_MS = 5_000;
const MAX_ENTRIES = 10_000;

/** conversation id → `workspace\nuser` → when the entry expires. */
const seen = new Map<string, Map<string, number>>();
let entries = 0;

const who = (workspaceId: string, userId: string) => `${workspaceId}\n${userId}`;

export function rememberParticipant(workspaceId: string, userId: string, conversationId: string, now = Date.now()) {
  if (entries >= MAX_ENTRIES) {
    seen.clear();
    entries = 0;
  }
  let users = seen.get(conversationId);
  if (!users) {
    users = new Map();
    seen.set(conversationId, users);
  }
  const key = who(workspaceId, userId);
  if (!users.has(key)) entries++;
  users.set(key, now + PARTICIPANT_TTL_MS);
}

export function knownParticipant(workspaceId: string, userId: string, conversationId: string, now = Date.now()) {
  const until = seen.get(conversationId)?.get(who(workspaceId, userId));
  return until !== undefined && until > now;
}

/** The conversation is gone: nobody takes part in it any more. */
export function forgetConversation(conversationId: string) {
  entries -= seen.get(conversationId)?.size ?? 0;
  seen.delete(conversationId);
}

/** The user left every conversation of the workspace (erasure). */
export function forgetUser(workspaceId: string, userId: string) {
  for (const users of seen.values()) if (users.delete(who(workspaceId, userId))) entries--;
}
