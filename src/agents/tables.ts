import { sql } from "drizzle-orm";
import {
  index,
  integer,
  primaryKey,
  type ReferenceConfig,
  sqliteTable,
  text,
  uniqueIndex,
} from "drizzle-orm/sqlite-core";
import { createdAt, ref } from "../db/columns";
import { workspaceRef, workspaceRow } from "../workspace/tables";

export const agents = sqliteTable(
  "agents",
  {
    ...workspaceRow(),
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
    /** Tool names and `*` patterns whose calls wait for a person's approval. */
    approvalRequired: text("approval_required").notNull().default("[]"),
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
    workspaceId: workspaceRef(),
    handle: text("handle").notNull(),
    agentId: ref("agent_id", () => agents.id),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.handle] }), index("agent_handles_agent_idx").on(t.agentId)],
);

/** An entry of a platform catalogue (seeded by migration; the same for every workspace). */
const catalogueEntry = () => ({
  slug: text("slug").primaryKey(),
  name: text("name").notNull(),
  description: text("description").notNull(),
});

/** The entries of a catalogue a workspace has installed, by slug (a key of `catalogue` when given). */
const installed = <N extends string>(name: N, catalogue?: ReferenceConfig["ref"]) =>
  sqliteTable(
    name,
    {
      workspaceId: workspaceRef(),
      slug: catalogue ? ref("slug", catalogue) : text("slug").notNull(),
      installedAt: text("installed_at").notNull(),
    },
    (t) => [primaryKey({ columns: [t.workspaceId, t.slug] })],
  );

export const skills = sqliteTable("skills", { ...catalogueEntry(), createdAt: createdAt() });

/** Skills a workspace has installed; an agent's skill subset may only name these. */
export const workspaceSkills = installed("workspace_skills", () => skills.slug);

export const mcpServers = sqliteTable("mcp_servers", {
  ...catalogueEntry(),
  url: text("url").notNull(),
  createdAt: createdAt(),
});

/**
 * MCP servers a workspace has installed. No foreign key on `slug`: a workspace's custom
 * integrations (`t:<slug>`, owned by the MCP area) are installed here too.
 */
export const workspaceMcpServers = installed("workspace_mcp_servers");
