import { z } from "@hono/zod-openapi";
import { idPathParams } from "../http/params";
import type { StoredApp } from "./service";
import { appUrl } from "./store";

export const AppIdParamsSchema = idPathParams("The app id");

export const AppSchema = z
  .object({
    id: z.uuid(),
    slug: z.string().openapi({ example: "sales-dashboard", description: "Unique in the workspace among live apps" }),
    title: z.string(),
    state: z
      .enum(["provisioning", "running", "sleeping", "failed", "destroyed"])
      .openapi({ description: "`sleeping` after 30 days without a visit; a visit wakes it" }),
    visibility: z
      .enum(["public", "private"])
      .openapi({ description: "`private`: only signed-in members of the workspace may visit it" }),
    run_mode: z.literal("static").openapi({ description: "Apps are static bundles" }),
    port: z.null().openapi({ description: "Always null for static apps" }),
    conversation_id: z
      .uuid()
      .nullable()
      .openapi({ description: "The conversation that published it; null once that conversation is deleted" }),
    url: z.url().openapi({ description: "`{APPS_ORIGIN}/v1/apps/{workspace_slug}/{app_slug}/`" }),
    created_at: z.string(),
    last_activity_at: z.string().openapi({ description: "Last visit (to the minute) or change" }),
  })
  .strict()
  .openapi("App");
export type App = z.infer<typeof AppSchema>;

export const AppListSchema = z
  .object({
    apps: z.array(AppSchema).openapi({ description: "Not destroyed, most recent activity first" }),
    quota: z.number().int().nonnegative().openapi({ description: "Apps the workspace may have (APP_QUOTA)" }),
    used: z.number().int().nonnegative().openapi({ description: "Apps counted against the quota (all but destroyed)" }),
  })
  .strict()
  .openapi("AppList");

export function toApp(origin: string, workspaceSlug: string, row: StoredApp): App {
  return {
    id: row.id,
    slug: row.slug,
    title: row.title,
    state: row.state,
    visibility: row.visibility,
    run_mode: "static",
    port: null,
    conversation_id: row.conversationId,
    url: appUrl(origin, workspaceSlug, row.slug),
    created_at: row.createdAt,
    last_activity_at: row.lastActivityAt,
  };
}
