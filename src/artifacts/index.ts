import type { Area } from "../http/area";

export const artifactsArea: Area = {
  name: "artifacts",
  routes: {
    paths: ["/v1/api/conversations", "/v1/api/artifacts"],
    load: async () => (await import("./routes")).artifactsRouter,
  },
  eraseStep: async (env, workspaceId, userId) => (await import("./service")).eraseArtifacts(env, workspaceId, userId),
  tools: async (scope) => (await import("./tools")).artifactTools(scope),
};
