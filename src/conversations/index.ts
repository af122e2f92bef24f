import type { Area } from "../http/area";

/** Conversations between members and agents, and the turns that answer them. */
export const conversationsArea: Area = {
  name: "conversations",
  routes: {
    paths: ["/v1/api/chat", "/v1/api/conversations", "/v1/api/ask", "/v1/api/approvals"],
    load: async () => (await import("./routes")).conversationsRouter,
  },
  eraseStep: async (env, workspaceId, userId) =>
    (await import("./erasure")).eraseParticipation(env, workspaceId, userId),
};
