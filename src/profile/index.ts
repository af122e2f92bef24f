import type { Area } from "../http/area";
import { refreshProfiles } from "./refresh";

/** The workspace's business profile: overrides, the queued crawler and its weekly refresh. */
export const profileArea: Area = {
  name: "profile",
  routes: { paths: ["/v1/api/business-profile"], load: async () => (await import("./routes")).profileRouter },
  // The crawler (`CRAWL_QUEUE` in crawls.ts) loads with its first batch, not with the isolate.
  queues: { "profile-crawl": async (batch, env) => (await import("./crawls")).consumeCrawls(batch, env) },
  crons: [refreshProfiles],
};
