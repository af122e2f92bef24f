/** Creating an agent and editing its fields. */
import { and, eq } from "drizzle-orm";
import { type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { agents } from "../db/schema";
import { modelBelongsTo } from "../llm/models";
import { providerModels } from "../llm/provider-models";
import { db, isUniqueViolation } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { ApiError, badRequest, notFound } from "../platform/problem";
import { DEFAULT_DELIVERY_MODE, DEFAULT_RUNTIME_PROFILE } from "./defaults";
import { checkHandles, handleTaken, syncHandles } from "./handle-rows";
import type { AgentRow, CreateAgentRequest, UpdateAgentRequest } from "./schemas";
import { type AgentRecord, getAgentRecord, toAgentRow } from "./service";
import { assertInstalled, keepInstalledOnly, uniqueSlugs } from "./subsets";

function checkModel(profile: string, model: string | null | undefined): void {
  if (model && !modelBelongsTo(profile, model)) {
    const detail = `model "${model}" does not belong to runtime profile "${profile}"`;
    throw badRequest("invalid_model", detail, [{ path: "model", message: detail }]);
  }
}

/**
 * A pinned model the configured provider does not list is refused when the agent is saved,
 * not at its first turn. A provider that answers no list cannot tell: the model is kept as given.
 */
async function checkProviderOffers(env: Env, model: string | null | undefined): Promise<void> {
  if (!model) return;
  const offered = await providerModels(env);
  if (!offered || offered.includes(model)) return;
  const detail = `The model provider does not offer "${model}"; available_models lists the ones it does`;
  throw new ApiError(400, "unknown_model", detail, [{ path: "model", message: detail }], undefined, {
    available_models: offered,
  });
}

// ---- create and update ----

/** Checks everything about a create request that does not need the new row. */
async function validateCreate(env: Env, workspaceId: string, input: CreateAgentRequest) {
  const aliases = input.aliases ?? [];
  checkHandles(input.slug, aliases, () => true);
  const profile = input.runtime_profile ?? DEFAULT_RUNTIME_PROFILE;
  checkModel(profile, input.model);
  await checkProviderOffers(env, input.model);
  const skills = uniqueSlugs(input.skills ?? []);
  const mcpServers = uniqueSlugs(input.mcp_servers ?? []);
  await assertInstalled(env, workspaceId, "skills", skills);
  await assertInstalled(env, workspaceId, "mcp_servers", mcpServers);
  return { aliases, profile, skills, mcpServers };
}

/**
 * Creates an enabled, non-default agent. Its row, its handles and the subsets (filtered
 * to what is still installed) are written in one batch: a taken handle is a 400, never a
 * duplicate. `avatarFor` supplies the avatar URL when the request gives none.
 */
export async function createAgent(
  env: Env,
  workspaceId: string,
  input: CreateAgentRequest,
  avatarFor: (agentId: string) => Promise<string>,
  event: (agentId: string) => AuditEventInput,
): Promise<AgentRow> {
  const { aliases, profile, skills, mcpServers } = await validateCreate(env, workspaceId, input);
  const d = db(env);
  const id = newId();
  const now = nowIso();
  const avatarUrl = input.avatar_url ?? (await avatarFor(id));
  try {
    const [, , , , , , [row]] = await d.batch([
      d.insert(agents).values({
        id,
        workspaceId,
        slug: input.slug,
        displayName: input.display_name,
        description: input.description ?? null,
        instructions: input.instructions ?? null,
        // Nothing was seeded for a created agent; written instructions are the admin's own.
        instructionsIsDefault: input.instructions == null,
        tone: input.tone ?? null,
        verbosity: input.verbosity ?? null,
        aliases: JSON.stringify(aliases),
        cautions: JSON.stringify(input.cautions ?? []),
        languages: JSON.stringify(input.languages ?? []),
        skills: JSON.stringify(skills),
        mcpServers: JSON.stringify(mcpServers),
        approvalRequired: JSON.stringify(input.approval_required ?? []),
        runtimeProfile: profile,
        deliveryMode: DEFAULT_DELIVERY_MODE,
        model: input.model ?? null,
        avatarUrl,
        status: "enabled",
        isDefault: false,
        createdAt: now,
        updatedAt: now,
      }),
      ...syncHandles(d, id),
      keepInstalledOnly(d, id, "skills"),
      keepInstalledOnly(d, id, "mcp_servers"),
      auditInBatch(env, event(id)),
      d.select().from(agents).where(eq(agents.id, id)),
    ]);
    return toAgentRow(row!);
  } catch (e) {
    if (isUniqueViolation(e)) throw await handleTaken(d, workspaceId, id, input.slug, aliases);
    throw e;
  }
}

export type AgentUpdate = { before: AgentRow; after: AgentRow; changed: string[] };

/** The slug and aliases after the edit: a rename keeps the old slug as an alias (at most 10). */
function handlesAfter(before: AgentRow, input: UpdateAgentRequest): { slug: string; aliases: string[] } {
  const slug = input.slug ?? before.slug;
  const renamed = slug !== before.slug;
  let aliases = input.aliases ?? before.aliases.filter((a) => a !== slug);
  if (renamed && !aliases.includes(before.slug)) aliases = [...aliases, before.slug];
  if (aliases.length > 10) {
    throw badRequest("invalid_alias", "an agent has at most 10 aliases (a rename adds the old slug)", [
      { path: "aliases", message: "at most 10" },
    ]);
  }
  const held = new Set([before.slug, ...before.aliases]);
  checkHandles(slug, aliases, (h) => !held.has(h));
  return { slug, aliases };
}

/** The columns the request sets; writing `instructions` (even null) clears `instructions_is_default`. */
function updatedColumns(
  input: UpdateAgentRequest,
  handles: { slug: string; aliases: string[] },
): Partial<typeof agents.$inferInsert> {
  const set: Partial<typeof agents.$inferInsert> = { updatedAt: nowIso() };
  if (input.slug !== undefined) set.slug = handles.slug;
  if (input.slug !== undefined || input.aliases !== undefined) set.aliases = JSON.stringify(handles.aliases);
  if (input.display_name !== undefined) set.displayName = input.display_name;
  if (input.description !== undefined) set.description = input.description;
  if (input.instructions !== undefined) {
    set.instructions = input.instructions;
    set.instructionsIsDefault = false;
  }
  if (input.tone !== undefined) set.tone = input.tone;
  if (input.verbosity !== undefined) set.verbosity = input.verbosity;
  if (input.cautions !== undefined) set.cautions = JSON.stringify(input.cautions);
  if (input.languages !== undefined) set.languages = JSON.stringify(input.languages);
  if (input.runtime_profile !== undefined) set.runtimeProfile = input.runtime_profile;
  if (input.model !== undefined) set.model = input.model;
  if (input.avatar_url !== undefined) set.avatarUrl = input.avatar_url;
  if (input.approval_required !== undefined) set.approvalRequired = JSON.stringify(input.approval_required);
  return set;
}

/**
 * Applies the fields sent (null clears a nullable one). Renaming keeps the old slug as an
 * alias; writing `instructions` (even null) makes `instructions_is_default` false.
 */
export async function updateAgent(
  env: Env,
  workspaceId: string,
  id: string,
  input: UpdateAgentRequest,
  event: (change: AgentUpdate) => AuditEventInput,
): Promise<AgentUpdate> {
  const current = await getAgentRecord(env, workspaceId, id);
  const before = toAgentRow(current);
  const { slug, aliases } = handlesAfter(before, input);
  const profile = input.runtime_profile ?? before.runtime_profile;
  const model = input.model !== undefined ? input.model : (before.model ?? null);
  checkModel(profile, model);
  // Only a model the request sets: an edit of another field is not refused for a pin made earlier.
  await checkProviderOffers(env, input.model);

  const set = updatedColumns(input, { slug, aliases });
  // The change is known before it is written, so its event commits in the same batch.
  const expected = diff(before, toAgentRow({ ...current, ...set }));
  const d = db(env);
  const update = d
    .update(agents)
    .set(set)
    .where(and(eq(agents.id, id), eq(agents.workspaceId, workspaceId)))
    .returning();
  const recorded = auditInBatch(env, event(expected), { onlyIf: PREVIOUS_STATEMENT_CHANGED });
  let row: AgentRecord | undefined;
  try {
    [[row]] = await d.batch([update, recorded, ...(set.aliases !== undefined ? syncHandles(d, id) : [])]);
  } catch (e) {
    if (isUniqueViolation(e)) throw await handleTaken(d, workspaceId, id, slug, aliases);
    throw e;
  }
  if (!row) throw notFound("No such agent in this workspace");
  return diff(before, toAgentRow(row));
}

function diff(before: AgentRow, after: AgentRow): AgentUpdate {
  const changed = (Object.keys(after) as (keyof AgentRow)[]).filter(
    (k) => JSON.stringify(before[k] ?? null) !== JSON.stringify(after[k] ?? null),
  );
  return { before, after, changed };
}
