/** Facts remembered about a user, and the agents a user froze. */
import { index, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { createdAt } from "../db/columns";
import { users } from "../identity/tables";
import { workspaces } from "../workspace/tables";

export const memoryFacts = sqliteTable(
  "memory_facts",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    agentSlug: text("agent_slug").notNull(),
    content: text("content").notNull(),
    createdAt: createdAt(),
  },
  (t) => [index("memory_facts_user_idx").on(t.workspaceId, t.userId, t.id)],
);

export const memoryFreezes = sqliteTable(
  "memory_freezes",
  {
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    agentSlug: text("agent_slug").notNull(),
    reason: text("reason"),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.userId, t.agentSlug] })],
);
