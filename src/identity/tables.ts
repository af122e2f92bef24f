import { index, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { createdAt, ref } from "../db/columns";
import { workspaceRow } from "../workspace/tables";

/** The column naming the user a row belongs to. */
export const userRef = () => ref("user_id", () => users.id);

export const users = sqliteTable(
  "users",
  {
    ...workspaceRow(),
    /** Sign-in name, unique across the service; null once the user is erased. */
    email: text("email").unique(),
    name: text("name"),
    role: text("role", { enum: ["admin", "member"] }).notNull(),
    passwordHash: text("password_hash"),
    createdAt: createdAt(),
    erasedAt: text("erased_at"),
  },
  (t) => [index("users_workspace_idx").on(t.workspaceId)],
);

/** Personal access tokens, stored by SHA-256 only. */
export const apiTokens = sqliteTable(
  "api_tokens",
  {
    ...workspaceRow(),
    userId: userRef(),
    name: text("name").notNull(),
    tokenHash: text("token_hash").notNull().unique(),
    /** JSON array of scope strings. */
    scopes: text("scopes").notNull(),
    createdAt: createdAt(),
    expiresAt: text("expires_at"),
    revokedAt: text("revoked_at"),
    lastUsedAt: text("last_used_at"),
  },
  (t) => [index("api_tokens_workspace_idx").on(t.workspaceId), index("api_tokens_user_idx").on(t.userId)],
);

/** Browser sign-in sessions (`svc_session` cookie), stored by SHA-256 only. */
export const sessions = sqliteTable(
  "sessions",
  {
    ...workspaceRow(),
    userId: userRef(),
    tokenHash: text("token_hash").notNull().unique(),
    createdAt: createdAt(),
    expiresAt: text("expires_at").notNull(),
    revokedAt: text("revoked_at"),
    lastUsedAt: text("last_used_at"),
  },
  (t) => [index("sessions_user_idx").on(t.userId)],
);
