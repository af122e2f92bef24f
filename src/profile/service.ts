/** A workspace's business profile: read with its overrides applied, and updated by an admin. */
import { eq, sql } from "drizzle-orm";
import { type AuditEventInput, auditInBatch } from "../audit/events";
import { businessProfiles } from "../db/schema";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { type DiscoveredProfile, EMPTY_DISCOVERY } from "./crawler";
import { enqueueCrawl } from "./crawls";
import { hexColour } from "./css";
import { normalizeDomain } from "./domain";
import { type BusinessProfile, type BusinessProfileUpdate, OVERRIDABLE_FIELDS, type OverridableField } from "./schemas";

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

export const NO_PROFILE: BusinessProfile = {
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
