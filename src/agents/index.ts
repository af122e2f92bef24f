import type { Area } from "../http/area";

export const agentsArea: Area = {
  name: "agents",
  routes: { paths: ["/v1/agents", "/v1/avatars"], load: async () => (await import("./routes")).agentsRouter },
};
