import type { Area } from "../http/area";
import { CRAWL_QUEUE, consumeCrawls } from "./crawls";
import { refreshProfiles } from "./refresh";
import { profileRouter } from "./routes";

/** The workspace's business profile: overrides, the queued crawler and its weekly refresh. */
export const profileArea: Area = {
  name: "profile",
  router: profileRouter,
  queues: { [CRAWL_QUEUE]: consumeCrawls },
  crons: [refreshProfiles],
};
