import { type Placeholder, type SQL, sql } from "drizzle-orm";
import { z } from "zod";
import type { ActorKind, AppendEvent, AuditOutcome, JsonObject } from "../../durable-objects/audit-log/types";
import { auditOutbox } from "../db/schema";
import { builtOnFirstUse } from "../platform/built-on-first-use";
import { type Db, db } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { markForDelivery } from "./delivery";

/**
 * Every kind of audit event and the details it may carry. A kind that is not here does not
 * compile, and a detail its shape does not name never reaches the log (parsing strips it), so
 * a token, a secret or a header can never slip in through a spread.
 *
 * Personal data (emails, names) is allowed only in `details`, which erasure redacts; the
 * event's `target` and `intent` carry ids and verbs only.
 */
// Each field's schema is built with its kind's, so the module builds none when the isolate starts.
const text = () => z.string().nullish();
const count = () => z.number().nullish();
const flag = () => z.boolean().nullish();
const texts = () => z.array(z.string()).nullish();
const numbers = () => z.record(z.string(), z.number()).nullish();
const details =
  <T extends Record<string, () => z.ZodType>>(fields: T) =>
  () =>
    z.object(
      Object.fromEntries(Object.entries(fields).map(([name, build]) => [name, build()])) as {
        [K in keyof T]: ReturnType<T[K]>;
      },
    );
const none = details({});

const EVENT_DETAILS = {
  // access and identity
  "access.denied": details({ method: text, path: text, required: text }),
  "workspace.signup": details({ workspace_name: text, slug: text, email: text, name: text }),
  "workspace.slug": details({
    slug: text,
    previous_slug: text,
    email_slug: text,
    previous_email_slug_routes_until: text,
  }),
  "user.create": details({ email: text, name: text, role: text }),
  "user.erase": details({ reason: text, counts: numbers, self: flag }),
  "token.create": details({ name: text, scopes: texts, user_id: text, expires_at: text }),
  "token.revoke": details({ name: text, user_id: text }),
  "session.signin": details({ email: text, reason: text }),
  "session.signout": none,
  // local browser: ids, counts and method names only, never screenshots, page text or typed text
  "browser.connect": details({ token_id: text }),
  "browser.disconnect": details({ cause: text, code: count, token_id: text, connected_at: text, duration_ms: count }),
  "browser.ask": details({
    agent_slug: text,
    steps: count,
    tool_calls: count,
    methods: texts,
    finish: text,
    timeout_ms: count,
    duration_ms: count,
  }),
  // agents
  "agent.create": details({
    slug: text,
    display_name: text,
    aliases: texts,
    runtime_profile: text,
    model: text,
    avatar: text,
  }),
  "agent.update": details({ fields: texts, slug: text, previous_slug: text }),
  // `reason` and what was removed when an uninstall or delete took an agent's only skill or MCP server
  "agent.disable": details({ slug: text, changed: flag, reason: text, skill: text, mcp_server: text }),
  "agent.subset_widened": details({ slug: text, reason: text, skill: text, mcp_server: text }),
  "agent.enable": details({ slug: text, changed: flag }),
  "agent.default": details({ slug: text, previous_default_id: text }),
  "agent.avatar": details({ source: text, content_type: text, size: count, sha256: text }),
  "agent.skills": details({ skills: texts, previous_skills: texts }),
  "agent.mcp": details({ mcp_servers: texts, previous_mcp_servers: texts }),
  "agent.suggest": details({ profile_used: flag, draft_length: count }),
  "skill.install": details({ slug: text, changed: flag }),
  "skill.uninstall": details({ slug: text, changed: flag, agents_updated: count }),
  "mcp.install": details({ slug: text, changed: flag }),
  "mcp.uninstall": details({ slug: text, changed: flag, agents_updated: count }),
  // conversations: ids, modes and counts only, never message text
  "conversation.create": details({ mode: text, agent_slug: text }),
  "conversation.delete": none,
  "conversation.participant.add": details({ user_id: text, added: flag }),
  "conversation.turn": details({
    message_id: text,
    runtime_profile: text,
    model: text,
    steps: count,
    tools: texts,
    finish: text,
    usage: numbers,
    credits: count,
  }),
  // a tool call held back for a person: the arguments' digest, never their text
  "approval.requested": details({
    approval_id: text,
    turn_id: text,
    tool_name: text,
    input_digest: text,
    expires_at: text,
  }),
  "approval.decided": details({
    approval_id: text,
    turn_id: text,
    tool_name: text,
    decision: text,
    decider: text,
    input_digest: text,
  }),
  // billing: slugs, Stripe object ids and amounts only, never card or customer details
  "billing.checkout": details({ plan_slug: text, session_id: text }),
  "billing.portal": details({ session_id: text }),
  "billing.topup": details({ pack_slug: text, session_id: text }),
  "billing.customer": details({ customer_id: text }),
  "billing.credit": details({
    ledger_kind: text,
    amount: count,
    reference: text,
    event_id: text,
    pack_slug: text,
    plan_slug: text,
  }),
  "billing.refund": details({
    ledger_kind: text,
    amount: count,
    reference: text,
    event_id: text,
    pack_slug: text,
    charge_id: text,
  }),
  "billing.plan": details({
    plan_slug: text,
    previous_plan_slug: text,
    status: text,
    previous_status: text,
    subscription_id: text,
    event_id: text,
  }),
  // memory: slugs and flags only, never a fact's content or a freeze's reason
  "memory.fact.create": details({ agent_slug: text }),
  "memory.fact.delete": details({ agent_slug: text }),
  "memory.freeze": details({ agent_slug: text, changed: flag }),
  "memory.unfreeze": details({ agent_slug: text, changed: flag }),
  // artifacts: ids in the target; metadata only, never the file name or its content
  "artifact.create": details({ source: text, content_type: text, size: count, sensitive: flag }),
  "artifact.delete": details({ source: text, content_type: text, size: count }),
  // apps: ids in the target; slug, visibility and sizes only, never a title or a file
  "app.publish": details({ slug: text, visibility: text, files: count, size: count }),
  "app.destroy": details({ slug: text, visibility: text, size: count }),
  "app.sleep": none,
  // team chat: Slack ids only, never the bot token or a message's text
  "teamchat.install": details({ team_id: text, bot_user_id: text, scopes: text, reinstall: flag }),
  "teamchat.uninstall": details({ team_id: text, cause: text, revoked: flag }),
  "teamchat.deliver": details({ channel_id: text, file_id: text, size: count, slack_error: text }),
  // business profile: field names only for an update; the crawl's outcome, never page content
  "profile.update": details({ fields: texts, cleared: texts, domain_changed: flag }),
  "profile.crawl": details({
    domain: text,
    crawl_status: text,
    pages: count,
    truncated: flag,
    fields: texts,
    technologies: texts,
    error_code: text,
    error: text,
  }),
  // MCP custom integrations (header names only, never their values)
  "mcp.custom.create": details({ slug: text, url: text, authenticated: flag }),
  "mcp.custom.delete": details({ slug: text }),
  "mcp.connector.create": details({ name: text }),
  "mcp.connector.revoke": none,
  "mcp.connector.enroll": details({ connector_id: text, cert_serial: text, cert_expires_at: text, reason: text }),
  // email: ids and verdicts only, never addresses, subjects or text
  "email.endpoint.create": details({ localpart: text }),
  "email.endpoint.update": details({ fields: texts }),
  "email.endpoint.delete": none,
  "email.receive": details({ endpoint_id: text, unrouted: flag, size: count, auto_submitted: flag, dmarc: text }),
  "email.triage": details({
    endpoint_id: text,
    state: text,
    reason: text,
    category: text,
    spam_score: count,
    dmarc: text,
    reply_id: text,
    agent_id: text,
    credits: count,
    steps: count,
  }),
  "email.review": details({ action: text, edited: flag, previous_state: text }),
  "email.send": details({ reply_to_id: text, threaded: flag, error: text }),
  // the OAuth authorization server
  "oauth.client.register": details({
    client_id: text,
    client_name: text,
    redirect_uris: texts,
    scope: text,
    token_endpoint_auth_method: text,
    grant_types: texts,
  }),
  "oauth.client.update": details({ client_id: text, client_name: text, redirect_uris: texts, scope: text }),
  "oauth.client.delete": details({ client_id: text, revoked_grants: count }),
  "oauth.consent.grant": details({ client_id: text, client_name: text, scopes: texts }),
  "oauth.consent.deny": details({ client_id: text, client_name: text, scopes: texts }),
  "oauth.grant.revoke": details({ client_id: text, reason: text, count: count }),
  "oauth.token.reuse": details({ client_id: text, token_kind: text, family_revoked: flag }),
  "oauth.token.issue": details({ client_id: text, scope: text }),
  "oauth.token.refresh": details({ client_id: text, scope: text }),
  // the audit log itself: a witness refused a checkpoint (it saw another history of the log)
  "audit.witness.conflict": details({ witness: text, witness_size: count, size: count }),
} as const satisfies Record<string, () => z.ZodObject>;

/**
 * Each kind's schema, built on its first use: building a hundred of them when the isolate
 * starts would cost every request's startup, for the few kinds a request records.
 */
export const AUDIT_EVENTS = builtOnFirstUse(EVENT_DETAILS);

export type AuditKind = keyof typeof AUDIT_EVENTS;
export type AuditDetails<K extends AuditKind> = z.input<(typeof AUDIT_EVENTS)[K]>;

export type AuditActor = { kind: ActorKind; id: string | null };

type EventOf<K extends AuditKind> = {
  kind: K;
  workspaceId: string;
  actor: AuditActor;
  outcome?: AuditOutcome;
  /** What was acted on, as `type:id` (ids only, never personal data). */
  target?: string;
  /** The verb; defaults to the last part of `kind`. Never personal data. */
  intent?: string;
  agentId?: string | null;
  conversationId?: string | null;
  /** The user the event is about, so erasure can find it. */
  subjectUserId?: string | null;
  details?: AuditDetails<K>;
};

/** An audit event as its author describes it: one member per kind, so its details are checked. */
export type AuditEventInput = { [K in AuditKind]: EventOf<K> }[AuditKind];

/** An event whose workspace and actor a route fills in from its caller (see `callerEvent`). */
export type AuditEventOf = {
  [K in AuditKind]: Omit<EventOf<K>, "workspaceId" | "actor"> & { workspaceId?: string; actor?: AuditActor };
}[AuditKind];

/** Conditions for an event in a batch whose change may turn out to be nothing. */
export type InBatch = {
  /**
   * The event's row is written only when this holds at its place in the batch;
   * `PREVIOUS_STATEMENT_CHANGED` is the usual one (put the event right after the change).
   */
  onlyIf?: SQL;
  /** Detail fields read inside the same transaction (e.g. the previous holder of a flag the batch moves). */
  detailsFromSql?: Record<string, SQL>;
  /**
   * For a change that names its workspace only in the database (the grant behind a token hash):
   * the rows the event is written for (`FROM … WHERE …`, no row, no event), its workspace as an
   * expression over them (the event's `workspaceId` is then "" unless known anyway), and event
   * fields (JSON paths such as `$.target`) from expressions.
   * Several rows selected (one event each): `idSuffix` keeps their ids distinct and in order.
   */
  from?: { source: SQL; workspaceId?: SQL; fields?: Record<string, SQL>; idSuffix?: SQL };
};

/** True right after a statement of the same batch that inserted, updated or deleted a row. */
export const PREVIOUS_STATEMENT_CHANGED = sql`changes() > 0`;

/** A JSON boolean from an SQL condition, for `detailsFromSql`. */
export const jsonBoolean = (condition: SQL) => sql`json(CASE WHEN ${condition} THEN 'true' ELSE 'false' END)`;

/**
 * Verb one: the event of a change, as a statement of the change's own D1 batch, so the change
 * and its event commit together or not at all. It reaches the workspace's chain by itself after
 * the response (or the end of the queue batch, cron run or mail).
 */
export function auditInBatch(env: Env, event: AuditEventInput, when: InBatch = {}) {
  const row = outboxRow(event);
  markForDelivery(env, event.workspaceId || null);
  if (!when.onlyIf && !when.detailsFromSql && !when.from) return db(env).insert(auditOutbox).values(row);
  return outboxSelect(db(env), { ...row, workspaceId: when.from?.workspaceId ?? row.workspaceId }, when);
}

/**
 * Verb one for a hot path's batch (see `batchPrepared`): the statement of `auditInBatch` with
 * `when`, built once per isolate from `d`; `auditValues` binds each event's row to it.
 */
export function preparedAuditInBatch(d: Db, when: InBatch & { from: { workspaceId: SQL } }) {
  const row = {
    id: sql.placeholder("auditId"),
    event: sql.placeholder("auditEvent"),
    createdAt: sql.placeholder("auditAt"),
  };
  return outboxSelect(d, { ...row, workspaceId: when.from.workspaceId }, when).prepare();
}

/**
 * The values of an event's row for a `preparedAuditInBatch` statement. `markLater`: the caller
 * learns the event's workspace from its batch and marks it for delivery itself (see
 * `markForDelivery`), which spares the delivery a search of the outbox.
 */
export function auditValues(env: Env, event: AuditEventInput, markLater = false) {
  const row = outboxRow(event);
  if (!markLater) markForDelivery(env, event.workspaceId || null);
  return { auditId: row.id, auditEvent: row.event, auditAt: row.createdAt };
}

type Bound = string | Placeholder | SQL;

/** `INSERT INTO audit_outbox … SELECT` of an event's row under the conditions of `when`. */
function outboxSelect(d: Db, row: { id: Bound; workspaceId: Bound; event: Bound; createdAt: Bound }, when: InBatch) {
  let json = sql`${row.event}`;
  for (const [field, value] of Object.entries(when.detailsFromSql ?? {}))
    json = sql`json_set(${json}, ${`$.details.${field}`}, ${value})`;
  for (const [path, value] of Object.entries(when.from?.fields ?? {})) json = sql`json_set(${json}, ${path}, ${value})`;
  const id = when.from?.idSuffix ? sql`${row.id} || ':' || ${when.from.idSuffix}` : sql`${row.id}`;
  const source = when.from?.source ?? sql``;
  const condition = when.onlyIf ? (when.from ? sql` AND ${when.onlyIf}` : sql` WHERE ${when.onlyIf}`) : sql``;
  // Every column, in the table's order: Drizzle's INSERT … SELECT names them all.
  return d
    .insert(auditOutbox)
    .select(sql`SELECT ${id}, ${row.workspaceId}, ${json}, ${row.createdAt}, 0, NULL ${source}${condition}`);
}

/**
 * Verb two: an event that no change accompanies (a refusal, a failed sign-in, a disconnect).
 * Its row is written at once and delivered like the others.
 */
export async function auditAlone(env: Env, event: AuditEventInput): Promise<void> {
  await db(env).insert(auditOutbox).values(outboxRow(event)).run();
  await markForDelivery(env, event.workspaceId, { now: true });
}

/** The outbox row an event becomes (the verbs write it; tests seed it). */
export function outboxRow(event: AuditEventInput): typeof auditOutbox.$inferInsert {
  const occurredAt = nowIso();
  const entry: AppendEvent = {
    kind: event.kind,
    outcome: event.outcome ?? "success",
    actorKind: event.actor.kind,
    actorId: event.actor.id,
    agentId: event.agentId ?? null,
    conversationId: event.conversationId ?? null,
    target: event.target ?? "",
    intent: event.intent ?? event.kind.split(".").pop() ?? "",
    subjectUserId: event.subjectUserId ?? null,
    details: AUDIT_EVENTS[event.kind].parse(event.details ?? {}) as JsonObject,
    occurredAt,
  };
  return { id: newId(), workspaceId: event.workspaceId, event: JSON.stringify(entry), createdAt: occurredAt };
}
