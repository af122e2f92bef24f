import type { Area } from "../http/area";
import { healthRouter } from "./routes";

export const healthArea: Area = { name: "health", router: healthRouter };
