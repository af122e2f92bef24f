import type { Area } from "../http/area";

/** Users, personal access tokens and erasure, for workspace admins. */
export const adminArea: Area = {
  name: "admin",
  routes: {
    paths: ["/v1/api/admin/users", "/v1/api/admin/tokens", "/v1/admin/users"],
    load: async () => (await import("./routes")).adminRouter,
  },
  eraseStep: async (env, workspaceId, userId) =>
    (await import("../identity/credentials")).eraseCredentials(env, workspaceId, userId),
};
