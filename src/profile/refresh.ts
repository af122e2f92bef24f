/** The weekly refresh of every profile that has a domain, queued from the minute cron. */
import { and, eq, isNotNull, isNull, lt, or } from "drizzle-orm";
import { businessProfiles } from "../db/schema";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { literalLimit } from "../platform/limit";

/** Refreshed profiles queued per cron tick (the queue takes 100 per `sendBatch`). */
export const REFRESH_PER_TICK = 500;
const WEEK_MS = 7 * 24 * 60 * 60 * 1000;

/** Whether a cron tick falls in the weekly refresh window: Mondays, 03:00-03:59 UTC. */
export const inRefreshWindow = (scheduledTime: number) => {
  const t = new Date(scheduledTime);
  return t.getUTCDay() === 1 && t.getUTCHours() === 3;
};

/**
 * The weekly refresh. The cron fires every minute; this acts only in the window, and queues
 * each profile whose last crawl was asked for more than six days ago (a tick missed or
 * cut short is made up by the next one; one that already ran finds nothing to do). A refresh
 * leaves `crawl_status` as it is until its crawl ends, and never touches overrides.
 */
export async function refreshProfiles(
  env: Env,
  controller: Pick<ScheduledController, "scheduledTime">,
): Promise<number> {
  if (!inRefreshWindow(controller.scheduledTime)) return 0;
  const d = db(env);
  const cutoff = new Date(controller.scheduledTime - WEEK_MS + 24 * 60 * 60 * 1000).toISOString();
  const due = await d
    .select({ workspaceId: businessProfiles.workspaceId, domain: businessProfiles.domain })
    .from(businessProfiles)
    .where(
      and(
        isNotNull(businessProfiles.domain),
        or(isNull(businessProfiles.crawlRequestedAt), lt(businessProfiles.crawlRequestedAt, cutoff)),
      ),
    )
    .limit(literalLimit(REFRESH_PER_TICK));
  if (!due.length) return 0;
  const now = nowIso();
  const messages = due.map((p) => ({ workspace_id: p.workspaceId, domain: p.domain!, crawl_id: newId() }));
  const [first, ...rest] = messages.map((m) =>
    d
      .update(businessProfiles)
      .set({ crawlId: m.crawl_id, crawlRequestedAt: now })
      .where(and(eq(businessProfiles.workspaceId, m.workspace_id), eq(businessProfiles.domain, m.domain))),
  );
  await d.batch([first!, ...rest]);
  for (let i = 0; i < messages.length; i += 100)
    await env.PROFILE_CRAWL.sendBatch(messages.slice(i, i + 100).map((body) => ({ body })));
  return messages.length;
}
