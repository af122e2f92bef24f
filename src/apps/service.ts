import { and, desc, eq, inArray, lt, lte, ne, or, sql } from "drizzle-orm";
import { type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { apps, workspaces } from "../db/schema";
import { db, insertSelect } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { forbidden, notFound } from "../platform/problem";
import { appFileKey, appPrefix, appQuota } from "./store";

export type StoredApp = typeof apps.$inferSelect;
export type AppFile = { path: string; content_type: string; size: number };
export type AppState = StoredApp["state"];

/** Largest bundle one app may hold, all files together. */
export const APP_MAX_BYTES = 5 * 1024 * 1024;
export const APP_MAX_FILES = 100;
/** Apps nobody visited for this long go to sleep (the cron); a visit wakes them. */
export const SLEEP_AFTER_DAYS = 30;
/** `last_activity_at` is written at most this often per app. */
export const ACTIVITY_GRANULARITY_MS = 60_000;

/** A tool-facing failure: the model sees the message; never a 5xx. */
export class PublishError extends Error {}

export const manifestOf = (row: Pick<StoredApp, "files">): AppFile[] => JSON.parse(row.files) as AppFile[];

/** A workspace-unique slug candidate from the title: 2-40 of a-z, 0-9 and -. */
export function slugFromTitle(title: string): string {
  const base = title
    .normalize("NFKD")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40)
    .replace(/-+$/g, "");
  return base.length >= 2 ? base : "app";
}

const withSuffix = (slug: string) =>
  `${slug.slice(0, 35)}-${Array.from(crypto.getRandomValues(new Uint8Array(2)), (b) => b.toString(16).padStart(2, "0")).join("")}`;

const countedAppsQuery = (env: Env, workspaceId: string) =>
  db(env)
    .select({ n: sql<number>`count(*)` })
    .from(apps)
    .where(and(eq(apps.workspaceId, workspaceId), ne(apps.state, "destroyed")));

export async function countedApps(env: Env, workspaceId: string): Promise<number> {
  const row = await countedAppsQuery(env, workspaceId).get();
  return row?.n ?? 0;
}

export type NewApp = {
  workspaceId: string;
  title: string;
  visibility: "public" | "private";
  conversationId: string | null;
  creatorUserId: string;
  agentId: string | null;
  files: { path: string; contentType: string; bytes: Uint8Array }[];
};

const isSlugTaken = (e: unknown) => /UNIQUE constraint failed: apps\.workspace_id, apps\.slug/i.test(String(e));

function manifestFor(files: NewApp["files"]): AppFile[] {
  return files.map((f) => ({ path: f.path, content_type: f.contentType, size: f.bytes.length }));
}

async function putBundle(env: Env, input: NewApp, id: string): Promise<void> {
  await Promise.all(
    input.files.map((f, n) =>
      env.FILES.put(appFileKey(input.workspaceId, id, n), f.bytes, { httpMetadata: { contentType: f.contentType } }),
    ),
  );
}

function newAppRow(id: string, input: NewApp, slug: string, manifest: AppFile[], size: number, now: string): StoredApp {
  return {
    id,
    workspaceId: input.workspaceId,
    slug,
    title: input.title,
    state: "running",
    visibility: input.visibility,
    runMode: "static",
    conversationId: input.conversationId,
    creatorUserId: input.creatorUserId,
    agentId: input.agentId,
    files: JSON.stringify(manifest),
    size,
    createdAt: now,
    lastActivityAt: now,
    destroyedAt: null,
  };
}

/** Runs `insert` with the title's slug, then with up to 5 suffixed ones while the slug is taken. */
async function withFreeSlug(title: string, insert: (slug: string) => Promise<void>): Promise<void> {
  let slug = slugFromTitle(title);
  for (let attempt = 0; ; attempt++) {
    try {
      return await insert(slug);
    } catch (e) {
      if (!isSlugTaken(e) || attempt >= 5) throw e;
      slug = withSuffix(slugFromTitle(title));
    }
  }
}

/**
 * Stores a static bundle and its row. Bytes go to R2 first; the row is then inserted only
 * while the workspace is under `APP_QUOTA`, the count and the insert in one statement, so
 * two publishes at the limit cannot both pass. A publish refused there removes its bytes.
 */
export async function publishApp(
  env: Env,
  input: NewApp,
  event: (app: { id: string; slug: string; visibility: string; size: number; files: number }) => AuditEventInput,
): Promise<StoredApp> {
  const quota = appQuota(env);
  const overQuota = () =>
    new PublishError(`the workspace has used its quota of ${quota} apps; destroy an app before publishing another`);
  if ((await countedApps(env, input.workspaceId)) >= quota) throw overQuota();

  const id = newId();
  const manifest = manifestFor(input.files);
  const size = manifest.reduce((n, f) => n + f.size, 0);
  await putBundle(env, input, id);
  const now = nowIso();
  try {
    await withFreeSlug(input.title, async (slug) => {
      const d = db(env);
      const [inserted] = await d.batch([
        insertSelect(
          d,
          apps,
          newAppRow(id, input, slug, manifest, size, now),
          sql`WHERE ${countedAppsQuery(env, input.workspaceId)} < ${quota}`,
        ),
        auditInBatch(env, event({ id, slug, visibility: input.visibility, size, files: manifest.length }), {
          onlyIf: PREVIOUS_STATEMENT_CHANGED,
        }),
      ]);
      if (!inserted.meta.changes) throw overQuota();
    });
  } catch (e) {
    await removeBytes(env, input.workspaceId, id);
    throw e;
  }
  const stored = await db(env).select().from(apps).where(eq(apps.id, id)).get();
  if (!stored) throw new Error("published app vanished");
  return stored;
}

async function removeBytes(env: Env, workspaceId: string, appId: string): Promise<void> {
  for (;;) {
    const listed = await env.FILES.list({ prefix: appPrefix(workspaceId, appId), limit: 1000 });
    if (listed.objects.length === 0) return;
    await env.FILES.delete(listed.objects.map((o) => o.key));
    if (!listed.truncated) return;
  }
}

/** The workspace's apps that are not destroyed, most recent activity first. */
export async function listApps(env: Env, workspaceId: string): Promise<StoredApp[]> {
  return db(env)
    .select()
    .from(apps)
    .where(and(eq(apps.workspaceId, workspaceId), ne(apps.state, "destroyed")))
    .orderBy(desc(apps.lastActivityAt), desc(apps.id))
    .all();
}

/**
 * Destroys an app (creator or admin): state `destroyed`, bytes removed; it no longer counts
 * against the quota and its slug is free again. Unknown, another workspace's or already
 * destroyed: 404; neither its creator nor an admin: 403.
 */
export async function destroyApp(
  env: Env,
  workspaceId: string,
  caller: { userId: string; admin: boolean },
  id: string,
  event: (app: StoredApp) => AuditEventInput,
): Promise<StoredApp> {
  const row = await db(env)
    .select()
    .from(apps)
    .where(and(eq(apps.id, id), eq(apps.workspaceId, workspaceId), ne(apps.state, "destroyed")))
    .get();
  if (!row) throw notFound("No such app");
  if (!caller.admin && row.creatorUserId !== caller.userId)
    throw forbidden("app_forbidden", "Only the app's creator or a workspace admin may destroy it");
  const now = nowIso();
  const d = db(env);
  const [[destroyed]] = await d.batch([
    d
      .update(apps)
      .set({ state: "destroyed", destroyedAt: now, lastActivityAt: now })
      .where(and(eq(apps.id, id), eq(apps.workspaceId, workspaceId), ne(apps.state, "destroyed")))
      .returning(),
    auditInBatch(env, event(row), { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
  ]);
  if (!destroyed) throw notFound("No such app");
  await removeBytes(env, workspaceId, id);
  return destroyed;
}

/** The app a visitor asks for: by workspace and app slug, running or sleeping. */
export async function findVisitedApp(
  env: Env,
  workspaceSlug: string,
  appSlug: string,
): Promise<(StoredApp & { workspaceSlug: string }) | null> {
  const row = await db(env)
    .select({ app: apps, workspaceSlug: workspaces.slug })
    .from(apps)
    .innerJoin(workspaces, eq(workspaces.id, apps.workspaceId))
    .where(
      and(eq(workspaces.slug, workspaceSlug), eq(apps.slug, appSlug), sql`${apps.state} IN ('running', 'sleeping')`),
    )
    .get();
  return row ? { ...row.app, workspaceSlug: row.workspaceSlug } : null;
}

/**
 * Records a visit: `last_activity_at` moves at most once a minute, and a sleeping app wakes.
 * Cheap when nothing is due: no write at all.
 */
export async function touchApp(env: Env, row: StoredApp, now = Date.now()): Promise<void> {
  const due = now - Date.parse(row.lastActivityAt) >= ACTIVITY_GRANULARITY_MS;
  if (!due && row.state !== "sleeping") return;
  const cutoff = new Date(now - ACTIVITY_GRANULARITY_MS).toISOString();
  await db(env)
    .update(apps)
    .set({
      lastActivityAt: new Date(now).toISOString(),
      state: sql`CASE WHEN ${apps.state} = 'sleeping' THEN 'running' ELSE ${apps.state} END`,
    })
    .where(
      and(
        eq(apps.id, row.id),
        inArray(apps.state, ["running", "sleeping"]),
        or(lte(apps.lastActivityAt, cutoff), eq(apps.state, "sleeping")),
      ),
    )
    .run();
}

/**
 * Apps of a deleted conversation keep running, with `conversation_id` null. A statement for
 * the conversations area's D1 batch, so the deletion and this commit together.
 */
export function detachConversationApps(env: Env, workspaceId: string, conversationId: string) {
  return db(env)
    .update(apps)
    .set({ conversationId: null })
    .where(and(eq(apps.workspaceId, workspaceId), eq(apps.conversationId, conversationId)));
}

/**
 * Running apps unvisited for 30 days go to sleep, each with its `app.sleep` event in the same
 * batch (selected by the same condition just before the update); answers the ones that did.
 */
export async function sleepIdleApps(env: Env, now = Date.now()): Promise<{ id: string; workspaceId: string }[]> {
  const cutoff = new Date(now - SLEEP_AFTER_DAYS * 86_400_000).toISOString();
  const event: AuditEventInput = { workspaceId: "", kind: "app.sleep", actor: { kind: "system", id: null } };
  const d = db(env);
  const idle = and(eq(apps.state, "running"), lt(apps.lastActivityAt, cutoff));
  const [, slept] = await d.batch([
    auditInBatch(env, event, {
      from: {
        source: sql`FROM ${apps} WHERE ${idle}`,
        workspaceId: sql`${apps.workspaceId}`,
        fields: { "$.target": sql`'app:' || ${apps.id}` },
        idSuffix: sql`${apps.id}`,
      },
    }),
    d.update(apps).set({ state: "sleeping" }).where(idle).returning({ id: apps.id, workspaceId: apps.workspaceId }),
  ]);
  return slept;
}
