/**
 * The audit outbox: every audit event is written here in the same D1 batch as the change it
 * records, and waits until the workspace's AuditLog object moves it into its chain, oldest
 * first: right after the commit, or from the every-minute cron when that delivery failed.
 */
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { createdAt } from "../db/columns";

export const auditOutbox = sqliteTable(
  "audit_outbox",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull(),
    /** The AppendEvent as JSON, with its original occurred_at. */
    event: text("event").notNull(),
    createdAt: createdAt(),
    attempts: integer("attempts").notNull().default(0),
    lastError: text("last_error"),
  },
  (t) => [index("audit_outbox_workspace_idx").on(t.workspaceId, t.id)],
);
