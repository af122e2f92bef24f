import type { Area } from "../http/area";

/** The member's own browser, driven through the extension's WebSocket. */
export const browserArea: Area = {
  name: "browser",
  routes: { paths: ["/v1/agent-browser"], load: async () => (await import("./routes")).browserRouter },
  eraseStep: async (env, workspaceId, userId) =>
    (await import("./service")).eraseBrowserSession(env, workspaceId, userId),
};
