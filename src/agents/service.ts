import { asc, desc, eq, sql } from "drizzle-orm";
import { agentHandles, agents } from "../db/schema";
import { parseJsonArray, preparedFor, type Db } from "../platform/db";
import { newId } from "../platform/ids";
import {
  DEFAULT_AGENT_DISPLAY_NAME,
  DEFAULT_AGENT_INSTRUCTIONS,
  DEFAULT_AGENT_SLUG,
  DEFAULT_DELIVERY_MODE,
  DEFAULT_RUNTIME_PROFILE,
} from "./defaults";
import type { AgentRow } from "./schemas";

type AgentRecord = typeof agents.$inferSelect;

export function toAgentRow(a: AgentRecord): AgentRow {
  return {
    id: a.id,
    slug: a.slug,
    display_name: a.displayName,
    aliases: parseJsonArray(a.aliases),
    cautions: parseJsonArray(a.cautions),
    languages: parseJsonArray(a.languages),
    runtime_profile: a.runtimeProfile,
    delivery_mode: a.deliveryMode,
    status: a.status,
    is_default: a.isDefault,
    instructions_is_default: a.instructionsIsDefault,
    created_at: a.createdAt,
    avatar_url: a.avatarUrl,
    description: a.description,
    instructions: a.instructions,
    model: a.model,
    tone: a.tone as AgentRow["tone"],
    verbosity: a.verbosity as AgentRow["verbosity"],
  };
}

const statements = preparedFor((d) => ({
  list: d
    .select()
    .from(agents)
    .where(eq(agents.workspaceId, sql.placeholder("workspaceId")))
    // default first, then enabled, then by slug
    .orderBy(desc(agents.isDefault), asc(sql`${agents.status} <> 'enabled'`), asc(agents.slug))
    .prepare(),
}));

export async function listAgents(env: Env, workspaceId: string): Promise<AgentRow[]> {
  const rows = await statements(env).list.all({ workspaceId });
  return rows.map(toAgentRow);
}

/** Statements that create a new workspace's default agent (run in the signup batch). */
export function defaultAgentInserts(d: Db, workspaceId: string, now: string) {
  const id = newId();
  return [
    d.insert(agents).values({
      id,
      workspaceId,
      slug: DEFAULT_AGENT_SLUG,
      displayName: DEFAULT_AGENT_DISPLAY_NAME,
      instructions: DEFAULT_AGENT_INSTRUCTIONS,
      instructionsIsDefault: true,
      runtimeProfile: DEFAULT_RUNTIME_PROFILE,
      deliveryMode: DEFAULT_DELIVERY_MODE,
      status: "enabled",
      isDefault: true,
      createdAt: now,
      updatedAt: now,
    }),
    d.insert(agentHandles).values({ workspaceId, handle: DEFAULT_AGENT_SLUG, agentId: id }),
  ] as const;
}
