/** Facts remembered about a user, and the agents a user froze. */
import { index, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { createdAt } from "../db/columns";
import { userRef } from "../identity/tables";
import { workspaceRef, workspaceRow } from "../workspace/tables";

export const memoryFacts = sqliteTable(
  "memory_facts",
  {
    ...workspaceRow(),
    userId: userRef(),
    agentSlug: text("agent_slug").notNull(),
    content: text("content").notNull(),
    createdAt: createdAt(),
  },
  (t) => [index("memory_facts_user_idx").on(t.workspaceId, t.userId, t.id)],
);

export const memoryFreezes = sqliteTable(
  "memory_freezes",
  {
    workspaceId: workspaceRef(),
    userId: userRef(),
    agentSlug: text("agent_slug").notNull(),
    reason: text("reason"),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.userId, t.agentSlug] })],
);
