import { problemResponse } from "../platform/problem";
import { ConversationIdParamSchema } from "./schemas";

/** What the conversations' route files share. */
export const TAGS = ["Conversations"];
export const params = { params: ConversationIdParamSchema };
export const notParticipant = problemResponse("No such conversation, or the caller does not take part in it");
