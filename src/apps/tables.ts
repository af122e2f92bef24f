/** Static bundles published by agents; the bytes are in R2 under `apps/<workspace>/<app>/<n>`. */
import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { createdAt } from "../db/columns";
import { users } from "../identity/tables";
import { workspaceRow } from "../workspace/tables";

export const apps = sqliteTable(
  "apps",
  {
    ...workspaceRow(),
    /** Unique per workspace among apps that are not destroyed. */
    slug: text("slug").notNull(),
    title: text("title").notNull(),
    /** `provisioning`, `running`, `sleeping`, `failed`, `destroyed`. */
    state: text("state", { enum: ["provisioning", "running", "sleeping", "failed", "destroyed"] }).notNull(),
    visibility: text("visibility", { enum: ["public", "private"] }).notNull(),
    runMode: text("run_mode").notNull().default("static"),
    /** Null once the conversation that published it is deleted; the app keeps running. */
    conversationId: text("conversation_id"),
    creatorUserId: text("creator_user_id").references(() => users.id),
    agentId: text("agent_id"),
    /** JSON `[{ path, content_type, size }]`; file n is stored under `apps/<workspace>/<app>/<n>`. */
    files: text("files").notNull(),
    size: integer("size").notNull(),
    createdAt: createdAt(),
    lastActivityAt: text("last_activity_at").notNull(),
    destroyedAt: text("destroyed_at"),
  },
  (t) => [
    uniqueIndex("apps_workspace_slug_idx").on(t.workspaceId, t.slug).where(sql`state <> 'destroyed'`),
    index("apps_workspace_activity_idx").on(t.workspaceId, t.lastActivityAt),
    index("apps_conversation_idx").on(t.conversationId),
    index("apps_state_activity_idx").on(t.state, t.lastActivityAt),
  ],
);
