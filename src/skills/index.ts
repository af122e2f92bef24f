import type { Area } from "../http/area";

/** The skill catalogue: installing skills for the workspace, and using them as tools of an agent's turn. */
export const skillsArea: Area = {
  name: "skills",
  routes: { paths: ["/v1/api/skills"], load: async () => (await import("./routes")).skillsRouter },
  tools: async (scope) => (await import("./tools")).skillToolProvider()(scope),
};
