import type { Area } from "../http/area";
import { browserRouter } from "./routes";
import { eraseBrowserSession } from "./service";

/** The member's own browser, driven through the extension's WebSocket. */
export const browserArea: Area = { name: "browser", router: browserRouter, eraseStep: eraseBrowserSession };
