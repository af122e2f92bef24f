import type { Area } from "../http/area";
import { eraseBrowserSession } from "./service";

/** The member's own browser, driven through the extension's WebSocket. */
export const browserArea: Area = {
  name: "browser",
  routes: { paths: ["/v1/agent-browser"], load: async () => (await import("./routes")).browserRouter },
  eraseStep: eraseBrowserSession,
};
