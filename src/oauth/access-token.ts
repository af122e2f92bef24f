import { and, eq, isNull, sql } from "drizzle-orm";
import { type BearerKind, callerColumns, credentialRow, named, toCaller } from "../auth/resolve";
import { oauthClients, oauthGrants, oauthTokens, users, workspaces } from "../db/schema";
import { hashToken } from "../platform/crypto";
import { parseJsonArray, preparedFor } from "../platform/db";
import { ACCESS_TOKEN_PREFIX } from "./token-pairs";

// One indexed query: token hash → live token, its live grant, live user, workspace and enabled client.
const statements = preparedFor((d) => ({
  access: d
    .select({
      id: oauthTokens.id,
      expiresAt: oauthTokens.expiresAt,
      grantScopes: oauthGrants.scopes,
      clientId: oauthGrants.clientId,
      resource: oauthGrants.resource,
      clientScopes: named<string>(oauthClients.scopes, "client_scopes"),
      ...callerColumns,
    })
    .from(oauthTokens)
    .innerJoin(oauthGrants, eq(oauthGrants.id, oauthTokens.grantId))
    .innerJoin(users, eq(users.id, oauthGrants.userId))
    .innerJoin(workspaces, eq(workspaces.id, oauthGrants.workspaceId))
    .innerJoin(oauthClients, eq(oauthClients.clientId, oauthGrants.clientId))
    .where(
      and(
        eq(oauthTokens.tokenHash, sql.placeholder("hash")),
        eq(oauthTokens.kind, "access"),
        isNull(oauthTokens.revokedAt),
        isNull(oauthGrants.revokedAt),
        isNull(users.erasedAt),
        isNull(oauthClients.disabledAt),
      ),
    )
    .prepare(),
}));

/**
 * OAuth access tokens on the API. Effective scopes are the granted scopes ∩ the client's
 * current scopes ∩ the user's role, computed per request. A token bound to a resource
 * (RFC 8707) carries it, and the routes of another resource refuse it.
 */
export const OAUTH_ACCESS_TOKEN: BearerKind = {
  prefix: ACCESS_TOKEN_PREFIX,
  resolve: async (env, token, now, alongRequest) => {
    const { row, along } = await credentialRow(env, statements(env).access, { hash: hashToken(token) }, alongRequest);
    if (!row || Date.parse(row.expiresAt) <= now) return null;
    const clientAllowed = new Set(parseJsonArray(row.clientScopes));
    const granted = parseJsonArray(row.grantScopes).filter((s) => clientAllowed.has(s));
    return {
      caller: toCaller("oauth", row, granted, { clientId: row.clientId, resource: row.resource }),
      along,
      expiresAt: row.expiresAt,
    };
  },
};
