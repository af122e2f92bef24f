/** Artifact metadata; the bytes are in R2 under `artifacts/<workspace>/<id>`. */
import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { createdAt } from "../db/columns";
import { users } from "../identity/tables";
import { workspaceRow } from "../workspace/tables";

export const artifacts = sqliteTable(
  "artifacts",
  {
    ...workspaceRow(),
    /** Null once detached (its conversation was deleted). */
    conversationId: text("conversation_id"),
    /** The user whose turn or upload produced it. */
    producerUserId: text("producer_user_id").references(() => users.id),
    agentId: text("agent_id"),
    name: text("name").notNull(),
    contentType: text("content_type").notNull(),
    size: integer("size").notNull(),
    /** Hex SHA-256 of the bytes: the strong ETag. */
    sha256: text("sha256").notNull(),
    caption: text("caption"),
    sensitive: integer("sensitive", { mode: "boolean" }).notNull().default(false),
    /** `upload`, `deliver_file`, `generate_image`, `research`. */
    source: text("source").notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    index("artifacts_workspace_idx").on(t.workspaceId, t.id),
    index("artifacts_conversation_idx").on(t.conversationId),
  ],
);
