import type { Area } from "../http/area";
import { memoryRouter } from "./routes";
import { eraseMemory } from "./service";
import { memoryTools } from "./tools";

/** Facts agents remember about a user, and the agents a user froze out of them. */
export const memoryArea: Area = { name: "memory", router: memoryRouter, eraseStep: eraseMemory, tools: memoryTools };
