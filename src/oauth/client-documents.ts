/**
 * OAuth Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document, as the
 * MCP authorization spec of 2026-07-28 uses them): a client with no prior relationship uses
 * the https URL of a JSON document describing it as its `client_id`. The document is fetched
 * through the guarded fetch (64 KiB, 5 s) when the client authorizes or calls the token
 * endpoint, and must name itself: its `client_id` equals the URL.
 *
 * The copy lives in the client's `oauth_clients` row (the codes, grants and consents of the
 * client reference that row), used until its HTTP caching headers say it is stale, and never
 * longer than 24 hours. D1 rather than the Cache API: the copy is read by authorize and token
 * requests that may land in different locations, the Cache API is per location (and does
 * nothing on workers.dev), and the row has to exist anyway.
 */
import { isNotNull, sql } from "drizzle-orm";
import { z } from "zod";
import { GRANTABLE_SCOPES, isGrantable } from "../auth/scopes";
import { oauthClients } from "../db/schema";
import { db } from "../platform/db";
import { guardedFetch, OutboundError } from "../platform/guarded-fetch";
import { activeClient, type ClientRow } from "./clients";
import { GRANT_TYPES, RedirectUriListSchema } from "./schemas";

export const DOCUMENT_MAX_BYTES = 64 * 1024;
export const DOCUMENT_TIMEOUT_MS = 5_000;
/** The longest a fetched document is used before it is fetched again, whatever its headers say. */
export const DOCUMENT_MAX_AGE_SECONDS = 86_400;
const MAX_CLIENT_ID_LENGTH = 2000;

/** A `client_id` that names a metadata document rather than a registered client. */
export const isDocumentClientId = (clientId: string): boolean => /^https:\/\//i.test(clientId);

/** The document cannot be used: why, in words for the error page or the token endpoint's `error_description`. */
export class UnusableClientDocument extends Error {
  constructor(
    readonly url: string,
    reason: string,
  ) {
    super(`The client metadata document ${url.slice(0, 200)} cannot be used: ${reason}`);
    this.name = "UnusableClientDocument";
  }
}

/** Why a `client_id` URL cannot name a document (draft §3), or null when it can. */
function urlProblem(clientId: string): string | null {
  if (clientId.length > MAX_CLIENT_ID_LENGTH) return `the URL is longer than ${MAX_CLIENT_ID_LENGTH} characters`;
  if (!URL.canParse(clientId)) return "it is not a valid URL";
  const url = new URL(clientId);
  if (url.protocol !== "https:") return "it must use https";
  if (url.username || url.password) return "it must not carry credentials";
  if (clientId.includes("#")) return "it must not have a fragment";
  // The URL must be written as it is fetched: no dot segments, no case or port variants.
  if (url.href !== clientId) return `it must be written in its normal form (${url.href.slice(0, 200)})`;
  if (url.pathname === "/") return "it must have a path";
  return null;
}

const DocumentSchema = z.object({
  client_id: z.string({ error: "client_id is required" }),
  client_name: z
    .string({ error: "client_name is required" })
    .trim()
    .min(1, "client_name must not be blank")
    .max(200, "client_name must be at most 200 characters"),
  redirect_uris: RedirectUriListSchema,
  token_endpoint_auth_method: z
    .literal("none", {
      error: "token_endpoint_auth_method must be none: only public clients may use a metadata document",
    })
    .optional(),
  grant_types: z
    .array(z.enum(GRANT_TYPES, { error: "grant_types may hold authorization_code and refresh_token only" }))
    .refine((g) => g.includes("authorization_code"), "grant_types must include authorization_code")
    .optional(),
  response_types: z
    .array(z.literal("code", { error: "response_types may hold code only" }))
    .min(1)
    .optional(),
  scope: z.string().max(1000, "scope must be at most 1000 characters").optional(),
});

/** What the service keeps of a usable document. */
export type ClientDocument = {
  name: string;
  redirectUris: string[];
  /** The document's scopes this server grants (never `svc:computer`), or every grantable scope. */
  scopes: string[];
  grantTypes: string[];
};

/** Validates a parsed document fetched from `url`. Throws `UnusableClientDocument`. */
export function readClientDocument(url: string, body: unknown): ClientDocument {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new UnusableClientDocument(url, "it is not a JSON object");
  const parsed = DocumentSchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const path = issue.path.map(String).join(".");
    throw new UnusableClientDocument(url, path ? `${path}: ${issue.message}` : issue.message);
  }
  const doc = parsed.data;
  if (doc.client_id !== url) throw new UnusableClientDocument(url, "its client_id is not the URL it was fetched from");
  const requested = doc.scope === undefined ? null : doc.scope.split(" ").filter(Boolean);
  const scopes = requested === null ? [...GRANTABLE_SCOPES] : GRANTABLE_SCOPES.filter((s) => requested.includes(s));
  if (!scopes.length) throw new UnusableClientDocument(url, "its scope names no scope this server grants");
  return {
    name: doc.client_name,
    redirectUris: [...new Set(doc.redirect_uris)],
    scopes: scopes.filter(isGrantable),
    // What the token endpoint really does for every client (see the registration schema).
    grantTypes: [...GRANT_TYPES],
  };
}

/**
 * How long a response may be used, from its caching headers (RFC 9111 §4.2): `no-store` and
 * `no-cache` mean not at all; `s-maxage`, else `max-age`, else `Expires` − `Date`, minus
 * `Age`; no header means not at all. Never beyond 24 hours.
 */
export function freshnessSeconds(headers: Headers, now = Date.now()): number {
  const directives = new Map<string, string | null>();
  for (const part of (headers.get("Cache-Control") ?? "").split(",")) {
    const [k, v] = part.split("=", 2).map((x) => x.trim());
    if (k) directives.set(k.toLowerCase(), v === undefined ? null : v.replace(/^"|"$/g, ""));
  }
  if (directives.has("no-store") || directives.has("no-cache")) return 0;
  const seconds = (v: string | null | undefined) => (v && /^\d{1,10}$/.test(v) ? Number(v) : null);
  let lifetime = seconds(directives.get("s-maxage")) ?? seconds(directives.get("max-age"));
  if (lifetime === null) {
    const expires = Date.parse(headers.get("Expires") ?? "");
    const date = Date.parse(headers.get("Date") ?? "");
    if (Number.isFinite(expires)) lifetime = Math.floor((expires - (Number.isFinite(date) ? date : now)) / 1000);
  }
  if (lifetime === null) return 0;
  const age = seconds(headers.get("Age")) ?? 0;
  return Math.max(0, Math.min(DOCUMENT_MAX_AGE_SECONDS, lifetime - age));
}

/** Fetches and validates the document at `url`. Throws `UnusableClientDocument`. */
export async function fetchClientDocument(
  env: Env,
  url: string,
  origin?: string,
): Promise<{ doc: ClientDocument; maxAgeSeconds: number }> {
  let body: unknown;
  let headers: Headers;
  try {
    const res = await guardedFetch(env, url, {
      headers: { Accept: "application/json" },
      maxBytes: DOCUMENT_MAX_BYTES,
      timeoutMs: DOCUMENT_TIMEOUT_MS,
      origin,
    });
    if (res.url !== url) {
      await res.cancel();
      throw new UnusableClientDocument(url, "it is served through a redirect, not at its own URL");
    }
    if (res.status !== 200) {
      await res.cancel();
      throw new UnusableClientDocument(url, `fetching it answered HTTP ${res.status}`);
    }
    headers = res.headers;
    const text = await res.text();
    try {
      body = JSON.parse(text);
    } catch {
      throw new UnusableClientDocument(url, "it is not valid JSON");
    }
  } catch (e) {
    if (e instanceof UnusableClientDocument) throw e;
    if (e instanceof OutboundError) {
      const reason =
        e.code === "blocked_url"
          ? "its address may not be fetched (private or local hosts, IP literals and non-https URLs are refused)"
          : e.code === "too_large"
            ? `it is larger than ${DOCUMENT_MAX_BYTES / 1024} KiB`
            : e.code === "timeout"
              ? `it did not arrive within ${DOCUMENT_TIMEOUT_MS / 1000} s`
              : "it could not be fetched";
      throw new UnusableClientDocument(url, reason);
    }
    throw e;
  }
  return { doc: readClientDocument(url, body), maxAgeSeconds: freshnessSeconds(headers) };
}

/** What a fetch again replaces in a stored document client. */
const DOCUMENT_FIELDS = [
  "name",
  "redirectUris",
  "scopes",
  "grantTypes",
  "updatedAt",
  "documentFetchedAt",
  "documentExpiresAt",
] as const;

/** Stores a fetched document as its client's row; nothing when the id is another client's. */
function upsertDocumentClient(env: Env, row: typeof oauthClients.$inferInsert) {
  return db(env)
    .insert(oauthClients)
    .values(row)
    .onConflictDoUpdate({
      target: oauthClients.clientId,
      set: Object.fromEntries(DOCUMENT_FIELDS.map((f) => [f, sql.raw(`excluded.${oauthClients[f].name}`)])),
      // A registered or first-party client has no document, so it is never overwritten.
      setWhere: isNotNull(oauthClients.documentFetchedAt),
    })
    .returning()
    .get();
}

/**
 * A client identified by a metadata document: its fresh stored copy, or the document fetched
 * again. A document never seen before is fetched only when `fetchNew` (the authorization
 * endpoint, for a signed-in user); elsewhere it is an unknown client (undefined).
 */
async function documentClient(
  env: Env,
  url: string,
  opts: { origin?: string; fetchNew: boolean },
): Promise<ClientRow | undefined> {
  const problem = urlProblem(url);
  if (problem) throw new UnusableClientDocument(url, problem);
  const now = Date.now();
  const stored = await activeClient(env, url);
  if (stored?.documentExpiresAt && Date.parse(stored.documentExpiresAt) > now) return stored;
  if (!stored && !opts.fetchNew) return undefined;
  const { doc, maxAgeSeconds } = await fetchClientDocument(env, url, opts.origin);
  const fetchedAt = new Date(now).toISOString();
  const row = await upsertDocumentClient(env, {
    clientId: url,
    name: doc.name,
    redirectUris: JSON.stringify(doc.redirectUris),
    scopes: JSON.stringify(doc.scopes),
    grantTypes: JSON.stringify(doc.grantTypes),
    responseTypes: '["code"]',
    authMethod: "none",
    issuedAt: Math.floor(now / 1000),
    createdAt: fetchedAt,
    updatedAt: fetchedAt,
    documentFetchedAt: fetchedAt,
    documentExpiresAt: new Date(now + maxAgeSeconds * 1000).toISOString(),
  });
  if (!row) throw new UnusableClientDocument(url, "this client_id is taken by another client");
  if (row.disabledAt) throw new UnusableClientDocument(url, "this client has been disabled");
  return row;
}

/**
 * The client a `client_id` names: a registered or first-party client (undefined when unknown
 * or deleted), or a metadata document's client (throws `UnusableClientDocument` when its
 * document cannot be used). `fetchNew`: whether a document never seen before may be fetched
 * (and stored); only the authorization endpoint, once a user is signed in, asks for that, so
 * nobody anonymous can make the service fetch documents or store clients.
 */
export async function resolveClient(
  env: Env,
  clientId: string,
  opts: { origin?: string; fetchNew: boolean },
): Promise<ClientRow | undefined> {
  return isDocumentClientId(clientId) ? documentClient(env, clientId, opts) : activeClient(env, clientId);
}

/** Whether the client is identified by a metadata document (always third-party, always asked for consent). */
export const isDocumentClient = (client: ClientRow): boolean => client.documentFetchedAt !== null;
