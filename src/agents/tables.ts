import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { createdAt, ref } from "../db/columns";
import { workspaces } from "../workspace/tables";

export const agents = sqliteTable(
  "agents",
  {
    id: text("id").primaryKey(),
    workspaceId: ref("workspace_id", () => workspaces.id),
    slug: text("slug").notNull(),
    displayName: text("display_name").notNull(),
    description: text("description"),
    instructions: text("instructions"),
    instructionsIsDefault: integer("instructions_is_default", { mode: "boolean" }).notNull(),
    tone: text("tone"),
    verbosity: text("verbosity"),
    /** JSON arrays of strings. */
    aliases: text("aliases").notNull().default("[]"),
    cautions: text("cautions").notNull().default("[]"),
    languages: text("languages").notNull().default("[]"),
    skills: text("skills").notNull().default("[]"),
    mcpServers: text("mcp_servers").notNull().default("[]"),
    runtimeProfile: text("runtime_profile").notNull(),
    deliveryMode: text("delivery_mode").notNull(),
    model: text("model"),
    avatarUrl: text("avatar_url"),
    status: text("status", { enum: ["enabled", "disabled"] }).notNull(),
    isDefault: integer("is_default", { mode: "boolean" }).notNull(),
    createdAt: createdAt(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [
    uniqueIndex("agents_workspace_slug_idx").on(t.workspaceId, t.slug),
    // At most one default agent per workspace, whatever the concurrency.
    uniqueIndex("agents_one_default_idx").on(t.workspaceId).where(sql`is_default = 1`),
  ],
);

/**
 * Every handle (slug or alias) of every agent, so that the database itself keeps
 * handles unique within a workspace.
 */
export const agentHandles = sqliteTable(
  "agent_handles",
  {
    workspaceId: ref("workspace_id", () => workspaces.id),
    handle: text("handle").notNull(),
    agentId: ref("agent_id", () => agents.id),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.handle] }), index("agent_handles_agent_idx").on(t.agentId)],
);

/** The platform's skill catalogue (seeded by migration; the same for every workspace). */
export const skills = sqliteTable("skills", {
  slug: text("slug").primaryKey(),
  name: text("name").notNull(),
  description: text("description").notNull(),
  createdAt: createdAt(),
});

/** Skills a workspace has installed; an agent's skill subset may only name these. */
export const workspaceSkills = sqliteTable(
  "workspace_skills",
  {
    workspaceId: ref("workspace_id", () => workspaces.id),
    slug: ref("slug", () => skills.slug),
    installedAt: text("installed_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.slug] })],
);

/** The platform's MCP-server catalogue (seeded by migration). */
export const mcpServers = sqliteTable("mcp_servers", {
  slug: text("slug").primaryKey(),
  name: text("name").notNull(),
  description: text("description").notNull(),
  url: text("url").notNull(),
  createdAt: createdAt(),
});

/**
 * MCP servers a workspace has installed. No foreign key on `slug`: a workspace's custom
 * integrations (`t:<slug>`, owned by the MCP area) are installed here too.
 */
export const workspaceMcpServers = sqliteTable(
  "workspace_mcp_servers",
  {
    workspaceId: ref("workspace_id", () => workspaces.id),
    slug: text("slug").notNull(),
    installedAt: text("installed_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.slug] })],
);
