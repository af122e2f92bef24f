/** The room of a conversation; the only place that names room objects. Addressed by the conversation id. */
export function conversationRoom(env: Env, conversationId: string) {
  return env.CONVERSATION_ROOM.getByName(conversationId);
}
