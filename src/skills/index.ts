import type { Area } from "../http/area";
import { skillToolProvider } from "./tools";

/** The catalogue's skills as tools of an agent's turn; no routes of its own. */
export const skillsArea: Area = { name: "skills", tools: skillToolProvider() };
