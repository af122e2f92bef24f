/** Revoking token families: one token (RFC 7009), one grant, a deleted client's, an erased user's. */
import { and, eq, inArray, isNull, type SQL, sql } from "drizzle-orm";
import { type AuditEventInput, auditInBatch, jsonBoolean, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { forgetCredentials } from "../auth/resolve";
import { oauthCodes, oauthConsents, oauthGrants, oauthTokens } from "../db/schema";
import { hashToken } from "../platform/crypto";
import { db } from "../platform/db";
import { nowIso } from "../platform/env";
import { grantFields } from "./token-events";
import {
  ACCESS_TOKEN_PREFIX,
  type GrantRef,
  REFRESH_TOKEN_PREFIX,
  type RevokeReason,
  tokenStatements,
} from "./token-pairs";

/**
 * RFC 7009 for the calling client's own tokens: revokes the token's whole family. Another
 * client's or an unknown token is left alone. Returns the family when this call revoked it.
 */
export async function revokeToken(env: Env, clientId: string, token: string): Promise<GrantRef | null> {
  if (!token.startsWith(ACCESS_TOKEN_PREFIX) && !token.startsWith(REFRESH_TOKEN_PREFIX)) return null;
  const t = await tokenStatements(env).tokenWithGrant.get({ hash: hashToken(token) });
  if (!t || t.clientId !== clientId || t.grantRevokedAt) return null;
  const revokeEvent: AuditEventInput = {
    workspaceId: "",
    kind: "oauth.grant.revoke",
    actor: { kind: "oauth_client", id: clientId },
    intent: "revoke",
    details: { client_id: clientId, reason: "revoked", count: 1 },
  };
  return revokeGrant(env, t.grantId, "revoked", { entry: revokeEvent, onlyIfRevoked: true });
}

/**
 * Revokes a grant and every token of it; returns it when it was still live. The event is
 * written in the same batch, filled from the grant's row (workspace, user, target) and
 * `family_revoked` when its details have one; `onlyIfRevoked` skips it when the grant was
 * already revoked.
 */
export async function revokeGrant(
  env: Env,
  grantId: string,
  reason: RevokeReason,
  event: { entry: AuditEventInput; onlyIfRevoked?: boolean },
): Promise<GrantRef | null> {
  const now = nowIso();
  const fields: Record<string, SQL> = { ...grantFields };
  // Right after the grant's UPDATE: whether this batch revoked it.
  if (event.entry.kind === "oauth.token.reuse")
    fields["$.details.family_revoked"] = jsonBoolean(PREVIOUS_STATEMENT_CHANGED);
  const d = db(env);
  const [[grant]] = await d.batch([
    d
      .update(oauthGrants)
      .set({ revokedAt: now, revokeReason: reason })
      .where(and(eq(oauthGrants.id, grantId), isNull(oauthGrants.revokedAt)))
      .returning({
        grantId: oauthGrants.id,
        workspaceId: oauthGrants.workspaceId,
        userId: oauthGrants.userId,
        clientId: oauthGrants.clientId,
      }),
    auditInBatch(env, event.entry, {
      from: {
        source: sql`FROM ${oauthGrants} WHERE ${oauthGrants.id} = ${grantId}`,
        workspaceId: sql`${oauthGrants.workspaceId}`,
        fields,
      },
      onlyIf: event.onlyIfRevoked ? PREVIOUS_STATEMENT_CHANGED : undefined,
    }),
    d
      .update(oauthTokens)
      .set({ revokedAt: now })
      .where(and(eq(oauthTokens.grantId, grantId), isNull(oauthTokens.revokedAt))),
  ]);
  forgetCredentials();
  return grant ?? null;
}

/** Revokes the live grants `which` selects and their tokens; the first statement answers the grants. */
function revokeGrantsWhere(env: Env, which: SQL | undefined, reason: RevokeReason, now: string) {
  const d = db(env);
  return [
    d
      .update(oauthGrants)
      .set({ revokedAt: now, revokeReason: reason })
      .where(and(which, isNull(oauthGrants.revokedAt)))
      .returning({ workspaceId: oauthGrants.workspaceId, userId: oauthGrants.userId }),
    d
      .update(oauthTokens)
      .set({ revokedAt: now })
      .where(
        and(
          isNull(oauthTokens.revokedAt),
          inArray(oauthTokens.grantId, d.select({ id: oauthGrants.id }).from(oauthGrants).where(which)),
        ),
      ),
  ] as const;
}

/** The statements that revoke every grant of a deleted client (the first answers the revoked grants). */
export function revokeGrantsOfClient(env: Env, clientId: string, now: string) {
  return [
    ...revokeGrantsWhere(env, eq(oauthGrants.clientId, clientId), "client_deleted", now),
    db(env)
      .delete(oauthCodes)
      .where(and(eq(oauthCodes.clientId, clientId), isNull(oauthCodes.consumedAt))),
  ] as const;
}

/**
 * Erasure: revokes the user's grants (and so their tokens), forgets their consents and
 * drops their unused codes. Counts revoked grants plus removed consents.
 */
export async function eraseOAuthUser(env: Env, workspaceId: string, userId: string): Promise<{ oauth_grants: number }> {
  const d = db(env);
  const [grants, , consents] = await d.batch([
    ...revokeGrantsWhere(
      env,
      and(eq(oauthGrants.workspaceId, workspaceId), eq(oauthGrants.userId, userId)),
      "user_erased",
      nowIso(),
    ),
    d
      .delete(oauthConsents)
      .where(and(eq(oauthConsents.workspaceId, workspaceId), eq(oauthConsents.userId, userId)))
      .returning({ id: oauthConsents.id }),
    d
      .delete(oauthCodes)
      .where(
        and(eq(oauthCodes.workspaceId, workspaceId), eq(oauthCodes.userId, userId), isNull(oauthCodes.consumedAt)),
      ),
  ]);
  forgetCredentials();
  return { oauth_grants: grants.length + consents.length };
}
