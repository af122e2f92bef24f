import { problemResponse } from "../platform/problem";
import { ConversationIdParamSchema } from "./schemas";

/** What the conversations' route files share. */
export const TAGS = ["Conversations"];
export const params = { params: ConversationIdParamSchema };
export const notParticipant = problemResponse("No such conversation, or the caller does not take part in it");
/** The errors of a route addressing one conversation of the caller's by its id. */
export const idErrors = { 400: problemResponse("Malformed id"), 404: notParticipant };
/** A 200 that streams the turn's UI message stream (server-sent events). */
export const uiStream = (description: string) => ({
  description,
  content: { "text/event-stream": { schema: { type: "string" as const } } },
});
