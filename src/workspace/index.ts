import type { Area } from "../http/area";
import { workspaceRouter } from "./routes";

export const workspaceArea: Area = { name: "workspace", router: workspaceRouter };
