import type { Area } from "../http/area";
import { skillsRouter } from "./routes";
import { skillToolProvider } from "./tools";

/** The skill catalogue: installing skills for the workspace, and using them as tools of an agent's turn. */
export const skillsArea: Area = { name: "skills", router: skillsRouter, tools: skillToolProvider() };
