import type { Area } from "../http/area";
import { profileRouter } from "./routes";
import { CRAWL_QUEUE, consumeCrawls, refreshProfiles } from "./service";

/** The workspace's business profile: overrides, the queued crawler and its weekly refresh. */
export const profileArea: Area = {
  name: "profile",
  router: profileRouter,
  queues: { [CRAWL_QUEUE]: consumeCrawls },
  crons: [refreshProfiles],
};
