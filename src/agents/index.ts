import type { Area } from "../http/area";
import { agentsRouter } from "./routes";

export const agentsArea: Area = { name: "agents", router: agentsRouter };
