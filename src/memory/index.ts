import type { Area } from "../http/area";
import { eraseMemory } from "./service";
import { memoryTools } from "./tools";

/** Facts agents remember about a user, and the agents a user froze out of them. */
export const memoryArea: Area = {
  name: "memory",
  routes: { paths: ["/v1/memory"], load: async () => (await import("./routes")).memoryRouter },
  eraseStep: eraseMemory,
  tools: memoryTools,
};
