import { sqliteTable, text } from "drizzle-orm/sqlite-core";
import { createdAt, ref } from "../db/columns";

/** The column naming the workspace a row belongs to. */
export const workspaceRef = () => ref("workspace_id", () => workspaces.id);

/** The first columns of a row a workspace owns: its id, then its workspace. */
export const workspaceRow = () => ({ id: text("id").primaryKey(), workspaceId: workspaceRef() });

export const workspaces = sqliteTable("workspaces", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  /** URL handle; globally unique. */
  slug: text("slug").notNull().unique(),
  /** Current email slug (mailbox addresses are `<localpart>-<email_slug>@<domain>`). */
  emailSlug: text("email_slug").notNull(),
  createdAt: createdAt(),
});

/**
 * Registry of email slugs, current and retired. A retired slug keeps routing to its
 * workspace (and stays unavailable to others) until `routes_until`.
 */
export const emailSlugs = sqliteTable("email_slugs", {
  slug: text("slug").primaryKey(),
  workspaceId: workspaceRef(),
  routesUntil: text("routes_until"),
  createdAt: createdAt(),
});
