/** Team chat: one Slack install per workspace. */
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { users } from "../identity/tables";
import { workspaces } from "../workspace/tables";

export const slackInstalls = sqliteTable(
  "slack_installs",
  {
    workspaceId: text("workspace_id")
      .primaryKey()
      .references(() => workspaces.id),
    teamId: text("team_id").notNull(),
    teamName: text("team_name"),
    botUserId: text("bot_user_id"),
    /** The bot token, sealed by platform/secret-box (AES-GCM, bound to the workspace id); null once uninstalled. */
    botTokenSealed: text("bot_token_sealed"),
    scopes: text("scopes").notNull().default(""),
    installedBy: text("installed_by").references(() => users.id),
    installedAt: text("installed_at").notNull(),
    /** False after an uninstall here or Slack's `app_uninstalled` / `tokens_revoked`. */
    live: integer("live", { mode: "boolean" }).notNull().default(true),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("slack_installs_team_idx").on(t.teamId)],
);

/** Install states already redeemed at the callback: a state works once (rows pruned after they expire). */
export const slackStateUses = sqliteTable("slack_state_uses", {
  nonce: text("nonce").primaryKey(),
  expiresAt: text("expires_at").notNull(),
});
