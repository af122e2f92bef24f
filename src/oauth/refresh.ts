/** The `refresh_token` grant: one rotation per token, a replay revokes the family. */
import { and, eq, exists, gt, isNull, or, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { markForDelivery } from "../audit/delivery";
import { auditValues, preparedAuditInBatch } from "../audit/events";
import { canonicalResource } from "../auth/resources";
import { oauthClients, oauthGrants, oauthTokens, users } from "../db/schema";
import { hashToken } from "../platform/crypto";
import { batchPrepared, type Db, preparedFor } from "../platform/db";
import { type Presented, presentedCredentials, verifyClient } from "./client-auth";
import { isDocumentClientId } from "./client-documents";
import { invalidClient, invalidGrant, invalidTarget } from "./errors";
import { revokeGrant } from "./revocation";
import { TokenRequestSchema } from "./schemas";
import { grantEventFields, reuseEvent, tokenEvent } from "./token-events";
import {
  type Issued,
  iso,
  newPair,
  preparedPair,
  REFRESH_TOKEN_PREFIX,
  tokenResponse,
  tokenStatements,
} from "./token-pairs";

const ph = sql.placeholder;

/**
 * A column of the grant of the token a statement works on, by primary key: a subquery builder,
 * so that RETURNING keeps its columns qualified.
 */
const ofGrant = (d: Db, column: SQLiteColumn) =>
  sql<string>`${d.select({ value: column }).from(oauthGrants).where(eq(oauthGrants.id, oauthTokens.grantId))}`;

/**
 * Claims the refresh token (one winner) and names its successor as the claim mark. The grant
 * check is correlated (one primary-key lookup): `grant_id IN (SELECT ... WHERE client_id = ?)`
 * built the list of every grant the client ever had on each call. A `resource` must be the
 * family's own: a refresh never moves tokens to another resource. The client must authenticate
 * in the same statement, as `verifyClient` demands (the registered method, and the secret's
 * hash for a confidential client), so the rotation needs no earlier round trip for the client;
 * what the client hears still comes from `verifyClient`'s constant-time check.
 */
function rotate(d: Db) {
  const authenticated = d
    .select({ id: oauthClients.clientId })
    .from(oauthClients)
    .where(
      and(
        eq(oauthClients.clientId, ph("clientId")),
        isNull(oauthClients.disabledAt),
        eq(oauthClients.authMethod, ph("method")),
        or(eq(oauthClients.authMethod, "none"), eq(oauthClients.secretHash, ph("secretHash"))),
      ),
    );
  const liveGrant = d
    .select({ id: oauthGrants.id })
    .from(oauthGrants)
    .where(
      and(
        eq(oauthGrants.id, oauthTokens.grantId),
        eq(oauthGrants.clientId, ph("clientId")),
        isNull(oauthGrants.revokedAt),
        or(sql`${ph("resource")} IS NULL`, eq(oauthGrants.resource, ph("resource"))),
        exists(authenticated),
      ),
    );
  return d
    .update(oauthTokens)
    .set({ revokedAt: sql`${ph("now")}`, replacedBy: sql`${ph("refreshId")}` })
    .where(
      and(
        eq(oauthTokens.tokenHash, ph("oldHash")),
        eq(oauthTokens.kind, "refresh"),
        isNull(oauthTokens.revokedAt),
        gt(oauthTokens.expiresAt, ph("now")),
        exists(liveGrant),
      ),
    )
    .returning({
      grantId: oauthTokens.grantId,
      scopes: ofGrant(d, oauthGrants.scopes),
      workspaceId: ofGrant(d, oauthGrants.workspaceId),
      userId: ofGrant(d, oauthGrants.userId),
      role: sql<string>`${d
        .select({ role: users.role })
        .from(oauthGrants)
        .innerJoin(users, eq(users.id, oauthGrants.userId))
        .where(eq(oauthGrants.id, oauthTokens.grantId))}`,
    })
    .prepare();
}

// Built once per isolate: built on each request, the queries cost more than the rest of the
// rotation (`npm run bench -- refresh`). The client's row comes first, for the error a refused
// client hears; the new pair and the event are selected from the row the rotation just claimed,
// so a request that lost the race writes nothing.
const rotation = preparedFor((d) => {
  const claimed = and(eq(oauthTokens.tokenHash, ph("oldHash")), eq(oauthTokens.replacedBy, ph("refreshId")));
  return [
    d
      .select()
      .from(oauthClients)
      .where(and(eq(oauthClients.clientId, ph("clientId")), isNull(oauthClients.disabledAt)))
      .prepare(),
    rotate(d),
    ...preparedPair(d, sql`${oauthTokens.grantId}`, sql`FROM ${oauthTokens} WHERE ${claimed}`),
    preparedAuditInBatch(d, {
      from: {
        source: sql`FROM ${oauthTokens} JOIN ${oauthGrants} ON ${oauthGrants.id} = ${oauthTokens.grantId}
          JOIN ${users} ON ${users.id} = ${oauthGrants.userId} WHERE ${claimed}`,
        workspaceId: sql`${oauthGrants.workspaceId}`,
        fields: grantEventFields,
      },
    }),
  ] as const;
});

/** A `refresh_token` request: the client's credentials as presented, the token, the canonical `resource`. */
export type RefreshRequest = {
  client: Presented & { clientId: string };
  refreshToken: string;
  resource: string | null;
};

/**
 * The refresh a token request asks for when the rotation's batch can authenticate its client
 * (see `refreshTokens`): a well-formed `refresh_token` request from a registered client, for
 * one of our resources or none. Null for anything else, which authenticates the client first,
 * so that a client that cannot authenticate hears `invalid_client` before anything about its
 * parameters, and a metadata-document client gets its document checked.
 */
export function refreshRequest(
  authorization: string | undefined,
  params: Map<string, string>,
  base: string,
): RefreshRequest | null {
  if (params.get("grant_type") !== "refresh_token") return null;
  const presented = presentedCredentials(authorization, params);
  const { clientId } = presented;
  if (!clientId || isDocumentClientId(clientId)) return null;
  const parsed = TokenRequestSchema.safeParse(Object.fromEntries(params));
  if (!parsed.success || !parsed.data.refresh_token) return null;
  const presentedResource = parsed.data.resource;
  const resource = presentedResource === undefined ? null : canonicalResource(base, presentedResource);
  if (presentedResource !== undefined && !resource) return null;
  return { client: { ...presented, clientId }, refreshToken: parsed.data.refresh_token, resource };
}

/**
 * `refresh_token` grant: authenticates the client and rotates the token (the new pair keeps
 * the grant's scopes) in one batch. A rotated token presented again revokes the whole family
 * (RFC 9700 §4.14.2) and the reuse is recorded. A client that cannot authenticate gets
 * `invalid_client`; other failures throw `invalid_grant` (or `invalid_target`).
 */
export async function refreshTokens(env: Env, { client, refreshToken, resource }: RefreshRequest): Promise<Issued> {
  const { clientId } = client;
  const now = Date.now();
  const nowIso = iso(now);
  const oldHash = hashToken(refreshToken);
  const pair = newPair(now);
  const [[registered], [row]] = await batchPrepared(env, rotation(env), {
    ...pair,
    now: nowIso,
    oldHash,
    clientId,
    method: client.method,
    secretHash: client.secret === undefined ? null : hashToken(client.secret),
    resource,
    ...auditValues(env, tokenEvent("oauth.token.refresh", clientId), true),
  });
  if (!registered) throw invalidClient("Unknown or deleted client", client.usedBasic);
  verifyClient(registered, client);
  if (row) {
    // The event was written with the rotation only, for the grant's workspace.
    markForDelivery(env, row.workspaceId);
    return {
      body: tokenResponse(pair, row.scopes, row.role),
      grant: { grantId: row.grantId, workspaceId: row.workspaceId, userId: row.userId, clientId },
    };
  }

  const t = refreshToken.startsWith(REFRESH_TOKEN_PREFIX)
    ? await tokenStatements(env).tokenWithGrant.get({ hash: oldHash })
    : undefined;
  if (t?.kind !== "refresh") throw invalidGrant("The refresh token is unknown");
  if (t.clientId !== clientId) throw invalidGrant("The refresh token was issued to another client");
  if (t.grantRevokedAt) throw invalidGrant("The refresh token has been revoked");
  if (t.revokedAt) {
    await revokeGrant(env, t.grantId, "refresh_reuse", { entry: reuseEvent(clientId, "refresh") });
    throw invalidGrant("The refresh token was already used; every token of its family is revoked");
  }
  if (t.expiresAt <= nowIso) throw invalidGrant("The refresh token has expired");
  if (resource && t.resource !== resource)
    throw invalidTarget(
      t.resource
        ? `The refresh token's tokens are for ${t.resource}, not ${resource}`
        : "The refresh token's tokens are not bound to a resource; authorize again with this resource",
    );
  throw invalidGrant("The refresh token is no longer valid");
}
