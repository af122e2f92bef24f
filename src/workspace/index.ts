import type { Area } from "../http/area";

export const workspaceArea: Area = {
  name: "workspace",
  routes: { paths: ["/v1/api/admin/workspace"], load: async () => (await import("./routes")).workspaceRouter },
};
