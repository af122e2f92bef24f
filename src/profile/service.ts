import { and, eq, isNotNull, isNull, lt, or, sql } from "drizzle-orm";
import { z } from "zod";
import { type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { businessProfiles } from "../db/schema";
import { languageModel } from "../llm/model";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { logError } from "../platform/log";
import { type CrawlOptions, type CrawlResult, crawlSite, type DiscoveredProfile, EMPTY_DISCOVERY } from "./crawler";
import { hexColour } from "./css";
import { normalizeDomain } from "./domain";
import { type BusinessProfile, type BusinessProfileUpdate, OVERRIDABLE_FIELDS, type OverridableField } from "./schemas";

export const CRAWL_QUEUE = "profile-crawl";

type Row = typeof businessProfiles.$inferSelect;
type Overrides = Partial<Record<OverridableField, unknown>>;

const parseObject = <T>(s: string, fallback: T): T => {
  try {
    const v: unknown = JSON.parse(s);
    return v && typeof v === "object" && !Array.isArray(v) ? (v as T) : fallback;
  } catch {
    return fallback;
  }
};

const NO_PROFILE: BusinessProfile = {
  domain: null,
  summary: null,
  palette: [],
  fonts: [],
  logo_url: null,
  crawl_status: "never",
  last_error: null,
  crawled_at: null,
  enrichment: { industry: null, segment: null, size_hint: null },
  technologies: [],
  overridden_fields: [],
  sources: {},
};

/** The GET shape: each override wins over the discovered value. */
export function toProfile(row: Row | undefined): BusinessProfile {
  if (!row) return NO_PROFILE;
  const found: DiscoveredProfile = { ...EMPTY_DISCOVERY, ...parseObject(row.discovered, {}) };
  const overrides = parseObject<Overrides>(row.overrides, {});
  const overridden = OVERRIDABLE_FIELDS.filter((f) => f in overrides);
  const pick = <F extends OverridableField>(f: F) => (f in overrides ? overrides[f] : found[f]) as never;
  return {
    domain: row.domain,
    summary: pick("summary"),
    palette: pick("palette"),
    fonts: pick("fonts"),
    logo_url: pick("logo_url"),
    crawl_status: row.crawlStatus as BusinessProfile["crawl_status"],
    last_error: row.lastError,
    crawled_at: row.crawledAt,
    enrichment: { industry: pick("industry"), segment: pick("segment"), size_hint: pick("size_hint") },
    technologies: found.technologies,
    overridden_fields: overridden,
    sources: found.sources,
  };
}

async function loadRow(env: Env, workspaceId: string): Promise<Row | undefined> {
  return db(env).select().from(businessProfiles).where(eq(businessProfiles.workspaceId, workspaceId)).get();
}

export async function getProfile(env: Env, workspaceId: string): Promise<BusinessProfile> {
  return toProfile(await loadRow(env, workspaceId));
}

/** What the suggestion feature of the agents area reads; null when the workspace has told us nothing. */
export type BusinessProfileFacts = {
  domain?: string | null;
  summary?: string | null;
  industry?: string | null;
  segment?: string | null;
  size_hint?: string | null;
  /** Technology names, most confident first. */
  technologies?: readonly string[];
};

export async function readBusinessProfile(env: Env, workspaceId: string): Promise<BusinessProfileFacts | null> {
  const row = await loadRow(env, workspaceId);
  if (!row) return null;
  const p = toProfile(row);
  const facts: BusinessProfileFacts = {
    domain: p.domain,
    summary: p.summary,
    industry: p.enrichment.industry,
    segment: p.enrichment.segment,
    size_hint: p.enrichment.size_hint,
    technologies: p.technologies.map((t) => t.name),
  };
  const known = Object.values(facts).some((v) => (Array.isArray(v) ? v.length > 0 : v !== null));
  return known ? facts : null;
}

export type CrawlMessage = { workspace_id: string; domain: string; crawl_id: string };
const CrawlMessageSchema = z.object({ workspace_id: z.string(), domain: z.string(), crawl_id: z.string() });

export type UpdateOutcome = {
  profile: BusinessProfile;
  /** Field names the body set, and those it cleared (for the audit event; never the values). */
  set: string[];
  cleared: string[];
  domainChanged: boolean;
};

function overridePatch(body: BusinessProfileUpdate): Record<string, unknown> {
  const patch: Record<string, unknown> = {};
  for (const field of OVERRIDABLE_FIELDS) {
    const value = body[field];
    if (value === undefined) continue;
    patch[field] = field === "palette" && value ? (value as string[]).map((c) => hexColour(c)!) : value;
  }
  return patch;
}

/**
 * Sets, clears or leaves each field. A new domain (normalized; 400 `invalid_domain`) resets
 * what the old one's crawl found, sets `pending` and queues a crawl; removing the domain
 * forgets the crawl. Overrides are merged in SQL (`json_patch`: a value sets, null removes),
 * so two admins editing different fields never undo each other.
 */
export async function updateProfile(
  env: Env,
  workspaceId: string,
  body: BusinessProfileUpdate,
  event: (change: { set: string[]; cleared: string[]; domainChanged: boolean }) => AuditEventInput,
): Promise<UpdateOutcome> {
  const domain = body.domain === undefined || body.domain === null ? body.domain : normalizeDomain(env, body.domain);
  const patch = overridePatch(body);
  const current = await loadRow(env, workspaceId);
  const domainChanged = domain !== undefined && domain !== (current?.domain ?? null);
  const now = nowIso();
  const crawlId = domainChanged && domain ? newId() : null;

  const domainFields = domainChanged
    ? {
        domain,
        crawlStatus: domain ? "pending" : "never",
        lastError: null,
        crawledAt: null,
        crawlId,
        crawlRequestedAt: domain ? now : null,
        discovered: "{}",
      }
    : {};
  const insertOverrides = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== null));
  const fields = Object.keys(body).filter((k) => body[k as keyof BusinessProfileUpdate] !== undefined);
  const change = {
    set: fields.filter((k) => body[k as keyof BusinessProfileUpdate] !== null),
    cleared: fields.filter((k) => body[k as keyof BusinessProfileUpdate] === null),
    domainChanged,
  };
  const d = db(env);
  await d.batch([
    d
      .insert(businessProfiles)
      .values({ workspaceId, ...domainFields, overrides: JSON.stringify(insertOverrides), updatedAt: now })
      .onConflictDoUpdate({
        target: businessProfiles.workspaceId,
        set: {
          ...domainFields,
          overrides: sql`json_patch(${businessProfiles.overrides}, ${JSON.stringify(patch)})`,
          updatedAt: now,
        },
      }),
    auditInBatch(env, event(change)),
  ]);

  if (crawlId && domain) await enqueueCrawl(env, { workspace_id: workspaceId, domain, crawl_id: crawlId });
  return { profile: await getProfile(env, workspaceId), ...change };
}

/** Queues a crawl; if the queue refuses, the profile says so (the weekly refresh tries again). */
async function enqueueCrawl(env: Env, message: CrawlMessage): Promise<void> {
  try {
    await env.PROFILE_CRAWL.send(message);
  } catch (error) {
    logError("profile crawl not queued", error);
    await db(env)
      .update(businessProfiles)
      .set({ crawlStatus: "error", lastError: "The crawl could not be queued; it will be retried", crawlId: null })
      .where(
        and(eq(businessProfiles.workspaceId, message.workspace_id), eq(businessProfiles.crawlId, message.crawl_id)),
      )
      .run();
  }
}

export type CrawlRun = "stale" | CrawlResult;

/**
 * Runs the crawl a message asks for, unless it is stale: the profile has since changed domain
 * or asked for another crawl (its `crawl_id` differs), or this one already ran. The result is
 * written only if that still holds when the crawl ends, and only what the crawl found is
 * written: overrides are never touched. Audited as `profile.crawl`.
 */
export async function runCrawl(env: Env, message: CrawlMessage, options: CrawlOptions = {}): Promise<CrawlRun> {
  const current = () =>
    and(
      eq(businessProfiles.workspaceId, message.workspace_id),
      eq(businessProfiles.domain, message.domain),
      eq(businessProfiles.crawlId, message.crawl_id),
    );
  const row = await db(env).select({ id: businessProfiles.workspaceId }).from(businessProfiles).where(current()).get();
  if (!row) return "stale";

  const result = await crawlSite(env, message.domain, { model: languageModel(env), ...options });
  const finished = nowIso();
  const event: AuditEventInput = {
    workspaceId: message.workspace_id,
    kind: "profile.crawl",
    actor: { kind: "system", id: null },
    outcome: result.ok ? "success" : "error",
    target: `workspace:${message.workspace_id}`,
    intent: "crawl",
    details: result.ok
      ? {
          domain: message.domain,
          crawl_status: "ok",
          pages: result.fetched.length,
          truncated: result.truncated,
          fields: Object.keys(result.discovered.sources),
          technologies: result.discovered.technologies.map((t) => t.name),
        }
      : {
          domain: message.domain,
          crawl_status: "error",
          pages: result.fetched.length,
          error_code: result.code,
          error: result.error,
        },
  };
  const d = db(env);
  const [[updated]] = await d.batch([
    d
      .update(businessProfiles)
      .set(
        result.ok
          ? {
              crawlStatus: "ok",
              lastError: null,
              crawledAt: finished,
              crawlId: null,
              discovered: JSON.stringify(result.discovered),
            }
          : { crawlStatus: "error", lastError: result.error.slice(0, 500), crawledAt: finished, crawlId: null },
      )
      .where(current())
      .returning({ id: businessProfiles.workspaceId }),
    // A stale crawl (the profile moved on meanwhile) writes nothing, its event neither.
    auditInBatch(env, event, { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
  ]);
  if (!updated) return "stale";
  return result;
}

/**
 * The `profile-crawl` consumer. Each message is crawled on its own; a site's failure is the
 * profile's `error` status, not a retry. Only an unexpected failure (D1 down) retries the
 * message, and after `max_retries` it goes to the dead-letter queue.
 */
export async function consumeCrawls(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  await Promise.all(
    batch.messages.map(async (message) => {
      const parsed = CrawlMessageSchema.safeParse(message.body);
      if (!parsed.success) return message.ack();
      try {
        await runCrawl(env, parsed.data);
        message.ack();
      } catch (error) {
        logError("profile crawl failed", error);
        message.retry({ delaySeconds: 30 });
      }
    }),
  );
}

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
    .limit(REFRESH_PER_TICK);
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
