/** The workspace's business profile: its website, what its crawl found, and the admin's overrides. */
import { index, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { workspaces } from "../workspace/tables";

export const businessProfiles = sqliteTable(
  "business_profiles",
  {
    workspaceId: text("workspace_id")
      .primaryKey()
      .references(() => workspaces.id),
    /** Normalized (lowercase ASCII, no scheme, port, path or leading `www.`); null before one is set. */
    domain: text("domain"),
    /** `never`, `pending`, `ok` or `error`. */
    crawlStatus: text("crawl_status").notNull().default("never"),
    lastError: text("last_error"),
    crawledAt: text("crawled_at"),
    /** The crawl the profile waits for: a queued message carrying another id is stale and dropped. */
    crawlId: text("crawl_id"),
    crawlRequestedAt: text("crawl_requested_at"),
    /** What the last crawl found, JSON `DiscoveredProfile` (never overwritten by an override). */
    discovered: text("discovered").notNull().default("{}"),
    /** The admin's overrides, JSON field → value; a field absent here shows the discovered value. */
    overrides: text("overrides").notNull().default("{}"),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("business_profiles_refresh_idx").on(t.crawlRequestedAt)],
);
