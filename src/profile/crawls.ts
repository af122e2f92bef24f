/**
 * The crawl queue: a crawl is queued when the domain changes (and weekly), and its consumer
 * runs it and writes what it found, unless the profile has moved on meanwhile.
 */
import { and, eq } from "drizzle-orm";
import { z } from "zod";
import { type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { businessProfiles } from "../db/schema";
import { languageModel } from "../llm/model";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { logError } from "../platform/log";
import { type CrawlOptions, type CrawlResult, crawlSite } from "./crawler";

export const CRAWL_QUEUE = "profile-crawl";

export type CrawlMessage = { workspace_id: string; domain: string; crawl_id: string };
const CrawlMessageSchema = z.object({ workspace_id: z.string(), domain: z.string(), crawl_id: z.string() });

/** Queues a crawl; if the queue refuses, the profile says so (the weekly refresh tries again). */
export async function enqueueCrawl(env: Env, message: CrawlMessage): Promise<void> {
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

/** The profile row the message was queued for: same workspace, domain and crawl id. */
function stillCurrent(message: CrawlMessage) {
  return and(
    eq(businessProfiles.workspaceId, message.workspace_id),
    eq(businessProfiles.domain, message.domain),
    eq(businessProfiles.crawlId, message.crawl_id),
  );
}

function crawlEvent(message: CrawlMessage, result: CrawlResult): AuditEventInput {
  return {
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
}

/** The profile columns a finished crawl sets; overrides are never among them. */
function crawledColumns(result: CrawlResult, finished: string) {
  return result.ok
    ? {
        crawlStatus: "ok" as const,
        lastError: null,
        crawledAt: finished,
        crawlId: null,
        discovered: JSON.stringify(result.discovered),
      }
    : { crawlStatus: "error" as const, lastError: result.error.slice(0, 500), crawledAt: finished, crawlId: null };
}

/**
 * Runs the crawl a message asks for, unless it is stale: the profile has since changed domain
 * or asked for another crawl (its `crawl_id` differs), or this one already ran. The result is
 * written only if that still holds when the crawl ends, and only what the crawl found is
 * written: overrides are never touched. Audited as `profile.crawl`.
 */
export async function runCrawl(env: Env, message: CrawlMessage, options: CrawlOptions = {}): Promise<CrawlRun> {
  const row = await db(env)
    .select({ id: businessProfiles.workspaceId })
    .from(businessProfiles)
    .where(stillCurrent(message))
    .get();
  if (!row) return "stale";

  const result = await crawlSite(env, message.domain, { model: languageModel(env), ...options });
  const finished = nowIso();
  const event = crawlEvent(message, result);
  const d = db(env);
  const [[updated]] = await d.batch([
    d
      .update(businessProfiles)
      .set(crawledColumns(result, finished))
      .where(stillCurrent(message))
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
