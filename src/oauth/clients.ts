import { and, count, eq, isNull, sql } from "drizzle-orm";
import { type AuditEventInput, auditInBatch, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { forgetCredentials } from "../auth/resolve";
import { oauthClients, oauthGrants } from "../db/schema";
import { OAuthError } from "../http/errors";
import { hashToken, timingSafeEqual } from "../platform/crypto";
import { db, insertSelect, parseJsonArray, preparedFor } from "../platform/db";
import { nowIso } from "../platform/env";
import { newId, randomToken } from "../platform/ids";
import { revokeGrantsOfClient } from "./revocation";
import type { AuthMethod, ClientInfo, RegisterRequest, UpdateClientRequest } from "./schemas";

export const CLIENT_ID_PREFIX = "svc_client_";
export const CLIENT_SECRET_PREFIX = "svc_csec_";
export const REGISTRATION_TOKEN_PREFIX = "svc_ratk_";
/** Active (not deleted) registered clients per account, i.e. per workspace. */
export const MAX_ACTIVE_CLIENTS = 50;

export type ClientRow = typeof oauthClients.$inferSelect;

const statements = preparedFor((d) => ({
  active: d
    .select()
    .from(oauthClients)
    .where(and(eq(oauthClients.clientId, sql.placeholder("clientId")), isNull(oauthClients.disabledAt)))
    .prepare(),
  byRegistrationToken: d
    .select()
    .from(oauthClients)
    .where(and(eq(oauthClients.registrationTokenHash, sql.placeholder("hash")), isNull(oauthClients.disabledAt)))
    .prepare(),
}));

/** An enabled client by id, or undefined (unknown or deleted). */
export const activeClient = (env: Env, clientId: string): Promise<ClientRow | undefined> =>
  statements(env).active.get({ clientId });

export const clientScopes = (c: ClientRow): string[] => parseJsonArray(c.scopes);
export const clientRedirectUris = (c: ClientRow): string[] => parseJsonArray(c.redirectUris);

export const registrationClientUri = (base: string, clientId: string) =>
  `${base}/v1/oauth/register/${encodeURIComponent(clientId)}`;

/** The management view of a client: never the secret or the registration access token. */
export function toClientInfo(c: ClientRow, base: string): ClientInfo {
  const confidential = c.authMethod !== "none";
  return {
    client_id: c.clientId,
    client_id_issued_at: c.issuedAt,
    ...(confidential ? { client_secret_expires_at: 0 } : {}),
    registration_client_uri: registrationClientUri(base, c.clientId),
    redirect_uris: clientRedirectUris(c),
    client_name: c.name,
    token_endpoint_auth_method: c.authMethod,
    grant_types: parseJsonArray(c.grantTypes) as ClientInfo["grant_types"],
    response_types: ["code"],
    scope: clientScopes(c).join(" "),
  };
}

function newClientRow(
  owner: { workspaceId: string; userId: string },
  req: RegisterRequest,
  secret: string | null,
  registrationToken: string,
  now: string,
): ClientRow {
  return {
    clientId: CLIENT_ID_PREFIX + newId().replaceAll("-", ""),
    workspaceId: owner.workspaceId,
    createdBy: owner.userId,
    name: req.client_name,
    redirectUris: JSON.stringify(req.redirect_uris),
    scopes: JSON.stringify(req.scope),
    grantTypes: JSON.stringify(req.grant_types),
    responseTypes: JSON.stringify(req.response_types),
    authMethod: req.token_endpoint_auth_method as AuthMethod,
    secretHash: secret ? hashToken(secret) : null,
    registrationTokenHash: hashToken(registrationToken),
    firstParty: false,
    issuedAt: Math.floor(Date.parse(now) / 1000),
    createdAt: now,
    updatedAt: now,
    disabledAt: null,
    documentFetchedAt: null,
    documentExpiresAt: null,
  };
}

/** Inserts the client and its audit event while the workspace is under the cap; false when it is not. */
async function insertUnderCap(env: Env, workspaceId: string, row: ClientRow, entry: AuditEventInput): Promise<boolean> {
  const d = db(env);
  const liveClients = d
    .select({ n: count() })
    .from(oauthClients)
    .where(and(eq(oauthClients.workspaceId, workspaceId), isNull(oauthClients.disabledAt)));
  const [result] = await d.batch([
    insertSelect(d, oauthClients, row, sql`WHERE ${liveClients} < ${MAX_ACTIVE_CLIENTS}`),
    // Written only when the client was (the cap held).
    auditInBatch(env, entry, { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
  ]);
  return Boolean(result?.meta.changes);
}

/**
 * Registers a third-party client for the caller's workspace. The 50-client cap is checked
 * in the INSERT itself, so concurrent registrations cannot overshoot it.
 */
export async function registerClient(
  env: Env,
  owner: { workspaceId: string; userId: string },
  req: RegisterRequest,
  base: string,
  event: (info: ClientInfo) => AuditEventInput,
): Promise<{ info: ClientInfo; row: ClientRow }> {
  const confidential = req.token_endpoint_auth_method !== "none";
  const secret = confidential ? randomToken(CLIENT_SECRET_PREFIX) : null;
  const registrationToken = randomToken(REGISTRATION_TOKEN_PREFIX);
  const row = newClientRow(owner, req, secret, registrationToken, nowIso());
  if (!(await insertUnderCap(env, owner.workspaceId, row, event(toClientInfo(row, base))))) {
    throw new OAuthError(
      400,
      "client_limit_reached",
      `An account may have at most ${MAX_ACTIVE_CLIENTS} active clients; delete one first`,
    );
  }
  const info: ClientInfo = {
    ...toClientInfo(row, base),
    ...(secret ? { client_secret: secret } : {}),
    registration_access_token: registrationToken,
  };
  return { info, row };
}

/** The enabled client a registration access token manages, or undefined. */
export async function clientByRegistrationToken(env: Env, token: string): Promise<ClientRow | undefined> {
  if (!token.startsWith(REGISTRATION_TOKEN_PREFIX)) return undefined;
  return statements(env).byRegistrationToken.get({ hash: hashToken(token) });
}

const sameList = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/** RFC 7592 update of the mutable metadata; the client type, id, secret and grant types stay. */
export async function updateClient(
  env: Env,
  client: ClientRow,
  req: UpdateClientRequest,
  event: (updated: ClientRow) => AuditEventInput,
): Promise<ClientRow> {
  const immutable = (field: string) => new OAuthError(400, "invalid_client_metadata", `${field} cannot be changed`);
  if (req.client_id !== undefined && req.client_id !== client.clientId) throw immutable("client_id");
  if (req.token_endpoint_auth_method !== undefined && req.token_endpoint_auth_method !== client.authMethod)
    throw immutable("token_endpoint_auth_method");
  if (
    req.client_secret !== undefined &&
    (!client.secretHash || !timingSafeEqual(hashToken(req.client_secret), client.secretHash))
  )
    throw immutable("client_secret");
  if (req.response_types !== undefined && !sameList([...new Set(req.response_types)], ["code"]))
    throw immutable("response_types");
  const updated: ClientRow = {
    ...client,
    name: req.client_name,
    redirectUris: JSON.stringify(req.redirect_uris),
    scopes: JSON.stringify(req.scope),
    updatedAt: nowIso(),
  };
  const d = db(env);
  await d.batch([
    d
      .update(oauthClients)
      .set({
        name: updated.name,
        redirectUris: updated.redirectUris,
        scopes: updated.scopes,
        updatedAt: updated.updatedAt,
      })
      .where(and(eq(oauthClients.clientId, client.clientId), isNull(oauthClients.disabledAt))),
    auditInBatch(env, event(updated), { onlyIf: PREVIOUS_STATEMENT_CHANGED }),
  ]);
  // A client's scopes bound its tokens' scopes.
  forgetCredentials();
  return updated;
}

/**
 * Soft-deletes a client: it can no longer authorize, exchange, introspect or revoke, its
 * registration access token stops working, and every token issued to it is revoked. The
 * client's `deleted` event and one `revoked` event per workspace whose grants it held are
 * written in the same batch, counted there before the revocation. Returns the revoked grants
 * per workspace.
 */
export async function disableClient(
  env: Env,
  client: ClientRow,
  events: { deleted: AuditEventInput; revoked: AuditEventInput },
): Promise<Map<string, { count: number; userIds: string[] }>> {
  const now = nowIso();
  const liveGrants = sql`FROM ${oauthGrants} WHERE ${and(eq(oauthGrants.clientId, client.clientId), isNull(oauthGrants.revokedAt))}`;
  const d = db(env);
  const [, , , revoked] = await d.batch([
    d.update(oauthClients).set({ disabledAt: now, updatedAt: now }).where(eq(oauthClients.clientId, client.clientId)),
    auditInBatch(env, events.deleted, {
      from: {
        source: sql`FROM (SELECT count(*) AS n ${liveGrants}) c`,
        fields: { "$.details.revoked_grants": sql`c.n` },
      },
    }),
    auditInBatch(env, events.revoked, {
      from: {
        source: sql`${liveGrants} GROUP BY ${oauthGrants.workspaceId}`,
        workspaceId: sql`${oauthGrants.workspaceId}`,
        fields: {
          "$.details.count": sql`count(*)`,
          "$.subjectUserId": sql`CASE WHEN count(DISTINCT ${oauthGrants.userId}) = 1 THEN min(${oauthGrants.userId}) END`,
        },
        idSuffix: sql`${oauthGrants.workspaceId}`,
      },
    }),
    ...revokeGrantsOfClient(env, client.clientId, now),
  ]);
  forgetCredentials();
  const byWorkspace = new Map<string, { count: number; userIds: string[] }>();
  for (const r of revoked) {
    const entry = byWorkspace.get(r.workspaceId) ?? { count: 0, userIds: [] };
    entry.count++;
    if (!entry.userIds.includes(r.userId)) entry.userIds.push(r.userId);
    byWorkspace.set(r.workspaceId, entry);
  }
  return byWorkspace;
}
