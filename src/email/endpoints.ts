import { and, eq, inArray, isNull, sql } from "drizzle-orm";
import { type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { agents, emailEndpoints, users, workspaces } from "../db/schema";
import { type Db, db, isUniqueViolation, parseJsonArray } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { badRequest, conflict, notFound } from "../platform/problem";
import { workspaceRow, workspaceRowWhere } from "../platform/workspace-rows";
import { type Counters, countersOf, NO_COUNTS } from "./endpoint-counters";
import { type CreateEndpoint, type Endpoint, RESERVED_LOCALPARTS, type UpdateEndpoint } from "./schemas";

export type EndpointRecord = typeof emailEndpoints.$inferSelect;

/** The system mailbox every workspace has. */
export const SYSTEM_LOCALPART = "team";

export const emailDomain = (env: Env) => (env.EMAIL_DOMAIN || "mail.localhost").toLowerCase();

export const mailboxAddress = (env: Env, localpart: string, emailSlug: string) =>
  `${localpart}-${emailSlug}@${emailDomain(env)}`;

/** The system endpoint's row, for the sign-up batch (plane `team`, replies reviewed, anyone may write). */
export function systemEndpointInsert(d: Db, workspaceId: string, now: string) {
  return d.insert(emailEndpoints).values({
    id: newId(),
    workspaceId,
    localpart: SYSTEM_LOCALPART,
    kind: "system",
    plane: "team",
    replyPolicy: "review",
    senderPolicy: "anyone",
    createdAt: now,
    updatedAt: now,
  });
}

export function toEndpoint(env: Env, row: EndpointRecord, emailSlug: string, counts: Counters = NO_COUNTS): Endpoint {
  const deliverTo = row.deliverTo ? (JSON.parse(row.deliverTo) as { user_ids: string[] }) : undefined;
  return {
    id: row.id,
    kind: row.kind as Endpoint["kind"],
    is_system: row.kind === "system",
    localpart: row.localpart,
    address: mailboxAddress(env, row.localpart, emailSlug),
    plane: row.plane as Endpoint["plane"],
    agent_id: row.agentId ?? undefined,
    enabled: row.enabled,
    reply_policy: row.replyPolicy as Endpoint["reply_policy"],
    sender_policy: row.senderPolicy as Endpoint["sender_policy"],
    allow_patterns: parseJsonArray(row.allowPatterns),
    allow_escalation: row.allowEscalation,
    court_intake_enabled: false,
    court_secure_mail_password_set: false,
    category_policy: JSON.parse(row.categoryPolicy) as Record<string, string>,
    deliver_to: deliverTo,
    default_reply_lang: row.defaultReplyLang ?? undefined,
    instructions: row.instructions ?? undefined,
    max_turns_per_day: row.maxTurnsPerDay ?? undefined,
    max_turns_per_sender_day: row.maxTurnsPerSenderDay ?? undefined,
    spam_score_max: row.spamScoreMax === null ? undefined : row.spamScoreMax / 100,
    ...counts,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  };
}

export async function emailSlugOf(env: Env, workspaceId: string): Promise<string> {
  const row = await db(env)
    .select({ slug: workspaces.emailSlug })
    .from(workspaces)
    .where(eq(workspaces.id, workspaceId))
    .get();
  if (!row) throw notFound("No such workspace");
  return row.slug;
}

/** The workspace's endpoints (system first, then by localpart) with their counters. */
export async function listEndpoints(env: Env, workspaceId: string) {
  const [rows, emailSlug, counts] = await Promise.all([
    db(env)
      .select()
      .from(emailEndpoints)
      .where(eq(emailEndpoints.workspaceId, workspaceId))
      .orderBy(sql`${emailEndpoints.kind} <> 'system'`, emailEndpoints.localpart)
      .all(),
    emailSlugOf(env, workspaceId),
    countersOf(env, workspaceId),
  ]);
  return {
    endpoints: rows.map((r) => toEndpoint(env, r, emailSlug, counts.get(r.id))),
    outbound_mailbox_localpart: SYSTEM_LOCALPART,
    domain: emailDomain(env),
    tenant_email_slug: emailSlug,
  };
}

export async function getEndpoint(env: Env, workspaceId: string, id: string): Promise<EndpointRecord> {
  const row = await workspaceRow(env, emailEndpoints, workspaceId, id);
  if (!row) throw notFound("No such email endpoint in this workspace");
  return row;
}

/** The settings as columns, checking what refers to other rows (agent, review owners). */
async function settingsColumns(env: Env, workspaceId: string, input: UpdateEndpoint) {
  const set: Partial<typeof emailEndpoints.$inferInsert> = {};
  if (input.localpart !== undefined) {
    if (RESERVED_LOCALPARTS.has(input.localpart))
      throw badRequest("reserved_localpart", `"${input.localpart}" is reserved`, [
        { path: "localpart", message: "reserved" },
      ]);
    set.localpart = input.localpart;
  }
  if (input.agent_id) {
    const agent = await db(env)
      .select({ id: agents.id })
      .from(agents)
      .where(workspaceRowWhere(agents, workspaceId, input.agent_id))
      .get();
    if (!agent)
      throw badRequest("invalid_agent", "No such agent in this workspace", [{ path: "agent_id", message: "unknown" }]);
  }
  if (input.deliver_to) {
    const ids = [...new Set(input.deliver_to.user_ids)];
    const found = await db(env)
      .select({ id: users.id })
      .from(users)
      .where(and(inArray(users.id, ids), eq(users.workspaceId, workspaceId), isNull(users.erasedAt)))
      .all();
    if (found.length !== ids.length)
      throw badRequest("invalid_review_owner", "Every review owner must be a user of this workspace", [
        { path: "deliver_to.user_ids", message: "unknown user" },
      ]);
  }
  if (input.plane !== undefined) set.plane = input.plane;
  if (input.agent_id !== undefined) set.agentId = input.agent_id;
  if (input.enabled !== undefined) set.enabled = input.enabled;
  if (input.reply_policy !== undefined) set.replyPolicy = input.reply_policy;
  if (input.sender_policy !== undefined) set.senderPolicy = input.sender_policy;
  if (input.allow_patterns !== undefined) set.allowPatterns = JSON.stringify(input.allow_patterns);
  if (input.allow_escalation !== undefined) set.allowEscalation = input.allow_escalation;
  if (input.category_policy !== undefined) set.categoryPolicy = JSON.stringify(input.category_policy);
  if (input.deliver_to !== undefined)
    set.deliverTo = input.deliver_to ? JSON.stringify({ user_ids: [...new Set(input.deliver_to.user_ids)] }) : null;
  if (input.default_reply_lang !== undefined) set.defaultReplyLang = input.default_reply_lang;
  if (input.instructions !== undefined) set.instructions = input.instructions;
  if (input.max_turns_per_day !== undefined) set.maxTurnsPerDay = input.max_turns_per_day;
  if (input.max_turns_per_sender_day !== undefined) set.maxTurnsPerSenderDay = input.max_turns_per_sender_day;
  if (input.spam_score_max !== undefined)
    set.spamScoreMax = input.spam_score_max === null ? null : Math.round(input.spam_score_max * 100);
  return set;
}

const localpartTaken = (localpart: string) =>
  conflict("localpart_taken", `The workspace already has a mailbox "${localpart}"`);

export async function createEndpoint(
  env: Env,
  workspaceId: string,
  input: CreateEndpoint,
  event: (id: string) => AuditEventInput,
): Promise<Endpoint> {
  const set = await settingsColumns(env, workspaceId, input);
  const now = nowIso();
  const id = newId();
  const row: typeof emailEndpoints.$inferInsert = {
    id,
    workspaceId,
    localpart: input.localpart,
    kind: "custom",
    plane: "agent",
    replyPolicy: "review",
    senderPolicy: "anyone",
    ...set,
    createdAt: now,
    updatedAt: now,
  };
  const d = db(env);
  try {
    await d.batch([d.insert(emailEndpoints).values(row), auditInBatch(env, event(id))]);
  } catch (e) {
    if (isUniqueViolation(e)) throw localpartTaken(input.localpart);
    throw e;
  }
  return toEndpoint(env, await getEndpoint(env, workspaceId, id), await emailSlugOf(env, workspaceId));
}

export async function updateEndpoint(
  env: Env,
  workspaceId: string,
  id: string,
  input: UpdateEndpoint,
  event: (fields: string[]) => AuditEventInput,
): Promise<Endpoint> {
  const current = await getEndpoint(env, workspaceId, id);
  if (current.kind === "system" && input.localpart !== undefined && input.localpart !== current.localpart)
    throw badRequest("system_endpoint", "The system mailbox keeps its name");
  const set = await settingsColumns(env, workspaceId, input);
  const fields = Object.keys(input).filter((k) => input[k as keyof UpdateEndpoint] !== undefined);
  const d = db(env);
  try {
    await d.batch([
      d
        .update(emailEndpoints)
        .set({ ...set, updatedAt: nowIso() })
        .where(workspaceRowWhere(emailEndpoints, workspaceId, id)),
      auditInBatch(env, event(fields), { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
    ]);
  } catch (e) {
    if (isUniqueViolation(e)) throw localpartTaken(input.localpart ?? current.localpart);
    throw e;
  }
  return toEndpoint(env, await getEndpoint(env, workspaceId, id), await emailSlugOf(env, workspaceId));
}

/** Deletes a custom endpoint (its mail stays, as the workspace's correspondence); the system one is a 400. */
export async function deleteEndpoint(env: Env, workspaceId: string, id: string, event: AuditEventInput): Promise<void> {
  const current = await getEndpoint(env, workspaceId, id);
  if (current.kind === "system") throw badRequest("system_endpoint", "The system mailbox cannot be deleted");
  const d = db(env);
  const [deleted] = await d.batch([
    d
      .delete(emailEndpoints)
      .where(workspaceRowWhere(emailEndpoints, workspaceId, id))
      .returning({ id: emailEndpoints.id }),
    auditInBatch(env, event, { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
  ]);
  if (!deleted.length) throw notFound("No such email endpoint in this workspace");
}
