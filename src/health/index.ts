import type { Area } from "../http/area";

export const healthArea: Area = {
  name: "health",
  routes: { paths: ["/v1/health"], load: async () => (await import("./routes")).healthRouter },
};
