/**
 * The authorization request: its validation (client and redirect URI first), consent memory,
 * and the consent form's session-bound CSRF token.
 */
import { and, eq } from "drizzle-orm";
import { type AuditEventInput, auditInBatch } from "../audit/events";
import { canonicalResource } from "../auth/resources";
import { isGrantable } from "../auth/scopes";
import { oauthConsents } from "../db/schema";
import { hmacSha256, timingSafeEqual } from "../platform/crypto";
import { db, parseJsonArray } from "../platform/db";
import { nowIso } from "../platform/env";
import { base64url, newId } from "../platform/ids";
import { isDocumentClient, resolveClient, UnusableClientDocument } from "./client-documents";
import { type ClientRow, clientRedirectUris, clientScopes } from "./clients";
import { matchRedirectUri } from "./redirect-uris";

/** The parameters the authorization endpoint reads; anything else is ignored. */
export const AUTHORIZE_PARAMS = [
  "client_id",
  "redirect_uri",
  "response_type",
  "code_challenge",
  "code_challenge_method",
  "scope",
  "state",
  "resource",
] as const;

export type AuthorizeRequest = {
  client: ClientRow;
  redirectUri: string;
  state: string | undefined;
  codeChallenge: string;
  /** Requested ∩ allowed (all allowed when none requested), in the client's order. */
  scopes: string[];
  /** The RFC 8707 resource the tokens will be bound to (canonical form), or null. */
  resource: string | null;
  /** The parameters as received, to carry through the consent form unchanged. */
  params: Record<string, string>;
};

export type AuthorizeCheck =
  /** The request cannot be used: answered 400 where it stands, never redirected (only `access_denied` is). */
  { kind: "error"; error: string; message: string } | { kind: "ok"; request: AuthorizeRequest };

// 43 characters for S256; RFC 7636 allows 43-128 for verifiers, we accept 32-128 as the spec says.
const CHALLENGE = /^[A-Za-z0-9_-]{32,128}$/;

/** `redirect_uri` with the response parameters and `iss` (RFC 9207) appended. */
export function authorizationRedirect(
  redirectUri: string,
  issuer: string,
  params: Record<string, string | undefined>,
): string {
  const url = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v);
  url.searchParams.set("iss", issuer);
  return url.href;
}

type Refusal = Extract<AuthorizeCheck, { kind: "error" }>;
const fail = (error: string, message: string): Refusal => ({ kind: "error", error, message });

/** A parameter given once and not empty; undefined when absent or empty, null when repeated. */
function once(query: URLSearchParams, name: string): string | null | undefined {
  const all = query.getAll(name);
  return all.length === 1 && all[0] !== "" ? all[0] : all.length > 1 ? null : undefined;
}

/** The client `client_id` names: registered, or resolved from its metadata document. */
async function findClient(
  env: Env,
  query: URLSearchParams,
  issuer: string,
  signedIn: boolean,
): Promise<Refusal | { kind: "client"; client: ClientRow }> {
  const clientId = once(query, "client_id");
  if (clientId === undefined) return fail("invalid_request", "The request has no client_id.");
  if (clientId === null) return fail("invalid_request", "The request has more than one client_id.");
  let client: ClientRow | undefined;
  try {
    client = await resolveClient(env, clientId, { origin: issuer, fetchNew: signedIn });
  } catch (e) {
    if (e instanceof UnusableClientDocument) return fail("invalid_request", e.message);
    throw e;
  }
  if (!client) return fail("invalid_client", "This application is unknown or has been deleted.");
  return { kind: "client", client };
}

/** The presented redirect URI when the client registered it, else null. */
function registeredRedirect(client: ClientRow, presented: string): string | null {
  // A metadata document's redirect URIs match exactly (no loopback port leeway): anyone can publish one.
  const registered = clientRedirectUris(client);
  const matches = isDocumentClient(client) ? registered.includes(presented) : matchRedirectUri(registered, presented);
  return matches ? presented : null;
}

/** No repeated parameter, `response_type=code` and an S256 PKCE challenge. */
function checkCodeRequest(query: URLSearchParams): Refusal | { kind: "code"; challenge: string } {
  for (const name of AUTHORIZE_PARAMS)
    if (query.getAll(name).length > 1) return fail("invalid_request", `${name} is given more than once`);
  const responseType = once(query, "response_type");
  if (responseType !== undefined && responseType !== "code")
    return fail("unsupported_response_type", "Only response_type=code is supported");
  const challenge = once(query, "code_challenge");
  if (!challenge) return fail("invalid_request", "code_challenge is required (PKCE with S256)");
  if (!CHALLENGE.test(challenge))
    return fail("invalid_request", "code_challenge must be 32-128 characters of the base64url alphabet");
  const method = once(query, "code_challenge_method");
  if (method !== undefined && method !== "S256") return fail("invalid_request", "code_challenge_method must be S256");
  return { kind: "code", challenge };
}

function requestedResource(
  query: URLSearchParams,
  issuer: string,
): Refusal | { kind: "resource"; resource: string | null } {
  const presentedResource = once(query, "resource");
  const resource = presentedResource === undefined ? null : canonicalResource(issuer, presentedResource ?? "");
  if (presentedResource !== undefined && !resource)
    return fail("invalid_target", "resource must be this API or its MCP server (RFC 8707)");
  return { kind: "resource", resource };
}

/** Requested ∩ allowed (all allowed when none requested), in the client's order, grantable ones only. */
function grantableScopes(client: ClientRow, query: URLSearchParams): string[] {
  const allowed = clientScopes(client);
  const requested = new Set((once(query, "scope") ?? "").split(" ").filter(Boolean));
  // svc:computer is never granted through OAuth (it widens one local-browser turn only):
  // dropped from a mixed request, and a request for it alone names nothing grantable.
  return (requested.size ? allowed.filter((s) => requested.has(s)) : allowed).filter(isGrantable);
}

/** The authorization parameters as received, to carry through the consent form unchanged. */
function carriedParams(query: URLSearchParams): Record<string, string> {
  const params: Record<string, string> = {};
  for (const name of AUTHORIZE_PARAMS) {
    const v = query.get(name);
    if (v !== null) params[name] = v;
  }
  return params;
}

/**
 * Judges an authorization request. `signedIn`: whether a user is signed in — a Client ID
 * Metadata Document never seen before is fetched only then (see `resolveClient`).
 */
export async function checkAuthorizeRequest(
  env: Env,
  query: URLSearchParams,
  issuer: string,
  signedIn: boolean,
): Promise<AuthorizeCheck> {
  const found = await findClient(env, query, issuer, signedIn);
  if (found.kind === "error") return found;
  const { client } = found;
  const presented = once(query, "redirect_uri");
  if (!presented) return fail("invalid_request", "The request has no single redirect_uri.");
  const redirectUri = registeredRedirect(client, presented);
  if (!redirectUri) return fail("invalid_request", "The redirect_uri is not registered for this application.");

  const code = checkCodeRequest(query);
  if (code.kind === "error") return code;
  const target = requestedResource(query, issuer);
  if (target.kind === "error") return target;
  const scopes = grantableScopes(client, query);
  if (!scopes.length) return fail("invalid_scope", "None of the requested scopes can be granted to this application");

  const state = query.get("state") ?? undefined;
  const request = { client, redirectUri, state, codeChallenge: code.challenge, scopes, resource: target.resource };
  return { kind: "ok", request: { ...request, params: carriedParams(query) } };
}

// --- consent -------------------------------------------------------------------------

/** True when the user already approved at least these scopes for this client. */
export async function consentCovers(
  env: Env,
  userId: string,
  clientId: string,
  scopes: readonly string[],
): Promise<boolean> {
  const row = await db(env)
    .select({ scopes: oauthConsents.scopes })
    .from(oauthConsents)
    .where(and(eq(oauthConsents.userId, userId), eq(oauthConsents.clientId, clientId)))
    .get();
  if (!row) return false;
  const approved = new Set(parseJsonArray(row.scopes));
  return scopes.every((s) => approved.has(s));
}

/** Remembers an approval; the remembered scopes grow to the union of every approval. */
export async function recordConsent(
  env: Env,
  p: { workspaceId: string; userId: string; clientId: string; scopes: readonly string[] },
  event: AuditEventInput,
): Promise<void> {
  const d = db(env);
  const existing = await d
    .select({ scopes: oauthConsents.scopes })
    .from(oauthConsents)
    .where(and(eq(oauthConsents.userId, p.userId), eq(oauthConsents.clientId, p.clientId)))
    .get();
  const scopes = JSON.stringify([...new Set([...parseJsonArray(existing?.scopes), ...p.scopes])].sort());
  const now = nowIso();
  await d.batch([
    d
      .insert(oauthConsents)
      .values({
        id: newId(),
        workspaceId: p.workspaceId,
        userId: p.userId,
        clientId: p.clientId,
        scopes,
        createdAt: now,
        updatedAt: now,
      })
      .onConflictDoUpdate({ target: [oauthConsents.userId, oauthConsents.clientId], set: { scopes, updatedAt: now } }),
    auditInBatch(env, event),
  ]);
}

// --- the consent form's CSRF token ----------------------------------------------------

/** How long a consent form stays valid. */
export const CONSENT_FORM_TTL_SECONDS = 1800;

function consentMac(sessionSecret: string, issuedAt: number, req: AuthorizeRequest): string {
  const message = [
    "svc-oauth-consent",
    issuedAt,
    req.client.clientId,
    req.redirectUri,
    req.codeChallenge,
    req.scopes.join(" "),
    req.state ?? "",
    req.resource ?? "",
  ].join("\n");
  return base64url(hmacSha256(sessionSecret, message));
}

/**
 * A token only the holder of the session cookie can produce (an HMAC keyed with the
 * session secret), bound to this authorization request and valid for 30 minutes.
 */
export function consentCsrfToken(sessionSecret: string, req: AuthorizeRequest, now = Date.now()): string {
  const issuedAt = Math.floor(now / 1000);
  return `${issuedAt}.${consentMac(sessionSecret, issuedAt, req)}`;
}

export function consentCsrfValid(
  sessionSecret: string,
  req: AuthorizeRequest,
  token: string | undefined,
  now = Date.now(),
): boolean {
  const match = /^(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(token ?? "");
  if (!match) return false;
  const issuedAt = Number(match[1]);
  const age = Math.floor(now / 1000) - issuedAt;
  if (age < 0 || age > CONSENT_FORM_TTL_SECONDS) return false;
  return timingSafeEqual(match[2]!, consentMac(sessionSecret, issuedAt, req));
}
