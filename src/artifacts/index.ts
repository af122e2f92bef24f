import type { Area } from "../http/area";
import { artifactsRouter } from "./routes";
import { eraseArtifacts } from "./service";
import { artifactTools } from "./tools";

export const artifactsArea: Area = {
  name: "artifacts",
  router: artifactsRouter,
  eraseStep: eraseArtifacts,
  tools: artifactTools,
};
