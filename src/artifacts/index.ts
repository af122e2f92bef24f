import type { Area } from "../http/area";
import { eraseArtifacts } from "./service";
import { artifactTools } from "./tools";

export const artifactsArea: Area = {
  name: "artifacts",
  routes: {
    paths: ["/v1/api/conversations", "/v1/api/artifacts"],
    load: async () => (await import("./routes")).artifactsRouter,
  },
  eraseStep: eraseArtifacts,
  tools: artifactTools,
};
