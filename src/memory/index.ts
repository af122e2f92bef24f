import type { Area } from "../http/area";

/** Facts agents remember about a user, and the agents a user froze out of them. */
export const memoryArea: Area = {
  name: "memory",
  routes: { paths: ["/v1/memory"], load: async () => (await import("./routes")).memoryRouter },
  eraseStep: async (env, workspaceId, userId) => (await import("./service")).eraseMemory(env, workspaceId, userId),
  tools: async (scope) => (await import("./tools")).memoryTools(scope),
};
