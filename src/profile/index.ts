import type { Area } from "../http/area";
import { CRAWL_QUEUE, consumeCrawls } from "./crawls";
import { refreshProfiles } from "./refresh";

/** The workspace's business profile: overrides, the queued crawler and its weekly refresh. */
export const profileArea: Area = {
  name: "profile",
  routes: { paths: ["/v1/api/business-profile"], load: async () => (await import("./routes")).profileRouter },
  queues: { [CRAWL_QUEUE]: consumeCrawls },
  crons: [refreshProfiles],
};
