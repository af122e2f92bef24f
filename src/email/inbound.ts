import { and, eq, gt, isNull, or, sql } from "drizzle-orm";
import { alias, type SQLiteInsertValue } from "drizzle-orm/sqlite-core";
import type { Email } from "postal-mime";
import { type AuditEventInput, auditValues, PREVIOUS_STATEMENT_CHANGED, preparedAuditInBatch } from "../audit/events";
import { emailEndpoints, emailMessages, emailSlugs } from "../db/schema";
import { batchPrepared, insertSelect, preparedFor } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId } from "../platform/ids";
import { logError } from "../platform/log";
import { emailDomain, SYSTEM_LOCALPART } from "./endpoints";

/** Mail over this size is refused at the door (the raw message, headers included). */
export const MAX_EMAIL_BYTES = 10 * 1024 * 1024;

export type TriageJob = { message_id: string };

type Route = { workspaceId: string; endpointId: string; unrouted: boolean };

/** The columns an inbound message's row is written with; the others take their defaults. */
const MESSAGE_COLUMNS = [
  "id",
  "workspaceId",
  "endpointId",
  "direction",
  "fromAddr",
  "toAddrs",
  "subject",
  "messageIdHeader",
  "referencesHeader",
  "rawKey",
  "size",
  "unrouted",
  "autoSubmitted",
  "dmarc",
  "handlingState",
  "occurredAt",
  "updatedAt",
] as const;

// The address is `<localpart>-<email slug>@<domain>`; localparts have no hyphen, so the first one
// splits. A sub-address tag (RFC 5233: `team-acme+orders@`, or `team+orders-acme@`) is ignored.
const ADDRESS = /^([a-z0-9._]+)(?:\+[^-@]*)?-([a-z0-9-]+)(?:\+[^@]*)?@(.+)$/;

const ph = sql.placeholder;

// Mail intake is a hot path (`npm run bench -- email`): its statements are prepared once.
const statements = preparedFor((d) => {
  /** The id of the slug's workspace's endpoint whose localpart the placeholder `name` holds. */
  const endpointNamed = (name: string) => {
    const e = alias(emailEndpoints, "e");
    const query = d
      .select({ id: e.id })
      .from(e)
      .where(and(eq(e.workspaceId, emailSlugs.workspaceId), eq(e.localpart, ph(name))));
    return sql<string | null>`${query}`;
  };
  const slugRoutes = and(
    eq(emailSlugs.slug, ph("slug")),
    or(isNull(emailSlugs.routesUntil), gt(emailSlugs.routesUntil, ph("now"))),
  );
  // The message row, written only where the address still routes as the isolate remembers it.
  const stillRouted = sql`FROM ${emailSlugs} WHERE ${and(
    slugRoutes,
    eq(emailSlugs.workspaceId, ph("workspaceId")),
    sql`coalesce(${endpointNamed("localpart")}, ${endpointNamed("system")}) = ${ph("endpointId")}`,
    sql`(${endpointNamed("localpart")} IS NULL) = ${ph("unrouted")}`,
  )}`;
  return {
    route: d
      .select({
        workspaceId: emailSlugs.workspaceId,
        endpointId: endpointNamed("localpart"),
        systemId: endpointNamed("system"),
      })
      .from(emailSlugs)
      .where(slugRoutes)
      .prepare(),
    store: [
      insertSelect(
        d,
        emailMessages,
        Object.fromEntries(MESSAGE_COLUMNS.map((name) => [name, ph(name)])) as SQLiteInsertValue<typeof emailMessages>,
        stillRouted,
      ).prepare(),
      preparedAuditInBatch(d, {
        from: { source: sql`WHERE ${PREVIOUS_STATEMENT_CHANGED}`, workspaceId: sql`${ph("workspaceId")}` },
      }),
    ] as const,
  };
});

/**
 * The workspace and endpoint an address names: the current email slug, or a previous one
 * within its 30 days. A known workspace with an unknown localpart routes to its system
 * mailbox, counted `unrouted`. Null for an address of no workspace.
 */
export async function routeAddress(env: Env, to: string): Promise<Route | null> {
  const address = parseAddress(env, to);
  return address ? lookUpRoute(env, address) : null;
}

type Address = { key: string; localpart: string; slug: string };

function parseAddress(env: Env, to: string): Address | null {
  const key = to.trim().toLowerCase();
  const m = ADDRESS.exec(key);
  if (!m || m[3] !== emailDomain(env)) return null;
  return { key, localpart: m[1]!, slug: m[2]! };
}

async function lookUpRoute(env: Env, { localpart, slug }: Address): Promise<Route | null> {
  const row = await statements(env).route.get({ slug, localpart, system: SYSTEM_LOCALPART, now: nowIso() });
  if (!row) return null;
  const endpointId = row.endpointId ?? row.systemId;
  if (!endpointId) return null;
  return { workspaceId: row.workspaceId, endpointId, unrouted: !row.endpointId };
}

/**
 * Per isolate: the route of each address that received mail here. The message's row is
 * written only where the address still routes so (checked in its own statement), so a stale
 * entry costs a retry, never a misrouted message; safe to lose.
 */
const knownRoutes = new Map<string, Route>();
const KNOWN_ROUTES_MAX = 1_000;

const header = (email: Email, name: string) =>
  email.headers.find((h) => h.key.toLowerCase() === name)?.value.trim() ?? null;

/**
 * Mail no responder may answer (RFC 3834 §2): `Auto-Submitted` other than `no`, `Precedence:
 * bulk|list|junk`, mailing-list mail (`List-Id`, `List-Unsubscribe`), Microsoft's
 * `X-Auto-Response-Suppress` asking for no automatic reply, and bounces (an empty envelope
 * sender, or a mailer daemon's address).
 */
export function isAutoSubmitted(email: Email, envelopeFrom: string): boolean {
  const auto = header(email, "auto-submitted")?.toLowerCase();
  const precedence = header(email, "precedence")?.toLowerCase();
  const suppress = (header(email, "x-auto-response-suppress") ?? "").toLowerCase().split(/[\s,]+/);
  const sender = (email.from?.address ?? "").toLowerCase();
  return (
    (!!auto && auto !== "no") ||
    (!!precedence && ["bulk", "list", "junk"].includes(precedence)) ||
    header(email, "list-id") !== null ||
    header(email, "list-unsubscribe") !== null ||
    suppress.some((v) => v === "all" || v === "autoreply" || v === "oof") ||
    envelopeFrom.trim() === "" ||
    envelopeFrom.trim() === "<>" ||
    /^(mailer-daemon|postmaster)@/.test(sender)
  );
}

/** The DMARC verdict the receiving server wrote in `Authentication-Results`: pass, fail or none. */
export function dmarcVerdict(email: Email): "pass" | "fail" | "none" {
  const results = email.headers.filter((h) => h.key.toLowerCase() === "authentication-results");
  for (const r of results) {
    const m = /\bdmarc=(pass|fail|none|quarantine|reject|temperror|permerror)/i.exec(r.value);
    if (m) return m[1]!.toLowerCase() === "pass" ? "pass" : m[1]!.toLowerCase() === "none" ? "none" : "fail";
  }
  return "none";
}

export type Inbound = { from: string; to: string; raw: ReadableStream<Uint8Array>; rawSize: number };
export type InboundResult = { ok: true; messageId: string } | { ok: false; reason: string };

/**
 * Receives one message: refuses unknown workspaces and oversize mail; stores the raw bytes in
 * R2, then the message row and its event in one batch, then queues triage. A queue that
 * refuses leaves the row `received`, which the sweep queues again: nothing is lost once the
 * bytes are stored. An address that received mail in this isolate before needs no lookup
 * first: its row is written only where the address still routes as it did.
 */
export async function receive(env: Env, mail: Inbound): Promise<InboundResult> {
  if (mail.rawSize > MAX_EMAIL_BYTES) return { ok: false, reason: "Message too large (the limit is 10 MiB)" };
  const address = parseAddress(env, mail.to);
  if (!address) return { ok: false, reason: "Unknown address" };
  let route = knownRoutes.get(address.key) ?? (await lookUpRoute(env, address));
  if (!route) return { ok: false, reason: "Unknown address" };
  const raw = new Uint8Array(await new Response(mail.raw).arrayBuffer());
  if (raw.byteLength > MAX_EMAIL_BYTES) return { ok: false, reason: "Message too large (the limit is 10 MiB)" };
  let id = await store(env, mail, address, route, raw);
  if (!id) {
    // The address no longer routes as it did (a renamed slug, a deleted mailbox): look it up again.
    knownRoutes.delete(address.key);
    route = await lookUpRoute(env, address);
    if (route) id = await store(env, mail, address, route, raw);
    if (!route || !id) return { ok: false, reason: "Unknown address" };
  }
  remember(address.key, route);
  await queueTriage(env, id);
  return { ok: true, messageId: id };
}

function remember(key: string, route: Route) {
  if (knownRoutes.size >= KNOWN_ROUTES_MAX) knownRoutes.clear();
  knownRoutes.set(key, route);
}

/**
 * The raw bytes to R2, then the message row and its event in one batch where the address still
 * routes to `route`; the message's id, or null (and no bytes kept) where it does not.
 */
async function store(env: Env, mail: Inbound, address: Address, route: Route, raw: Uint8Array): Promise<string | null> {
  const id = newId();
  const rawKey = `email/${route.workspaceId}/${id}.eml`;
  await env.FILES.put(rawKey, raw, { httpMetadata: { contentType: "message/rfc822" } });
  const { default: PostalMime } = await import("postal-mime");
  // Every field the row takes comes from the header block; the body is parsed by triage, if at all.
  const email = await PostalMime.parse(headerBlock(raw));
  const now = nowIso();
  const from = (email.from?.address || mail.from).toLowerCase();
  const references = [header(email, "references"), email.inReplyTo].filter(Boolean).join(" ").trim();
  const row = {
    id,
    workspaceId: route.workspaceId,
    endpointId: route.endpointId,
    direction: "inbound",
    fromAddr: from,
    toAddrs: JSON.stringify([mail.to.toLowerCase()]),
    subject: email.subject?.slice(0, 998) ?? null,
    messageIdHeader: email.messageId?.trim() || null,
    referencesHeader: references || null,
    rawKey,
    size: raw.byteLength,
    unrouted: route.unrouted,
    autoSubmitted: isAutoSubmitted(email, mail.from),
    dmarc: dmarcVerdict(email),
    handlingState: "received",
    occurredAt: now,
    updatedAt: now,
  } satisfies Record<(typeof MESSAGE_COLUMNS)[number], unknown>;
  const event: AuditEventInput = {
    workspaceId: route.workspaceId,
    kind: "email.receive",
    actor: { kind: "system", id: null },
    target: `email_message:${id}`,
    intent: "receive",
    details: {
      endpoint_id: route.endpointId,
      unrouted: route.unrouted,
      size: raw.byteLength,
      auto_submitted: row.autoSubmitted,
      dmarc: row.dmarc,
    },
  };
  let written: boolean;
  try {
    const [result] = await batchPrepared(env, statements(env).store, {
      ...row,
      slug: address.slug,
      localpart: address.localpart,
      system: SYSTEM_LOCALPART,
      now,
      ...auditValues(env, event),
    });
    written = result.meta.changes > 0;
  } catch (error) {
    await env.FILES.delete(rawKey);
    throw error;
  }
  if (!written) await env.FILES.delete(rawKey);
  return written ? id : null;
}

/** The message up to the blank line that ends its header block (all of it when there is none). */
export function headerBlock(raw: Uint8Array): Uint8Array {
  for (let i = 0; i < raw.length - 1; i++) {
    if (raw[i] !== 10) continue;
    if (raw[i + 1] === 10) return raw.subarray(0, i + 2);
    if (raw[i + 1] === 13 && raw[i + 2] === 10) return raw.subarray(0, i + 3);
  }
  return raw;
}

/** Queues a message's triage; a refusal is logged and left to the sweep. */
export async function queueTriage(env: Env, messageId: string): Promise<void> {
  try {
    await env.EMAIL_TRIAGE.send({ message_id: messageId } satisfies TriageJob);
  } catch (error) {
    logError("email triage not queued", error);
  }
}
