import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { businessProfiles } from "../../src/db/schema";
import { db } from "../../src/platform/db";
import type { DiscoveredProfile } from "../../src/profile/crawler";
import { EMPTY_DISCOVERY } from "../../src/profile/crawler";

/** Stores a profile as if a crawl of `domain` had found `found` (no queue, no fetch). */
export async function seedProfile(workspaceId: string, domain: string, found: Partial<DiscoveredProfile>) {
  const now = new Date().toISOString();
  const row = {
    workspaceId,
    domain,
    crawlStatus: "ok",
    crawledAt: now,
    discovered: JSON.stringify({ ...EMPTY_DISCOVERY, ...found }),
    overrides: "{}",
    updatedAt: now,
  };
  await db(env)
    .insert(businessProfiles)
    .values(row)
    .onConflictDoUpdate({ target: businessProfiles.workspaceId, set: row });
}

export async function deleteProfile(workspaceId: string) {
  await db(env).delete(businessProfiles).where(eq(businessProfiles.workspaceId, workspaceId));
}
