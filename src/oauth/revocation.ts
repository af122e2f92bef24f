/** Revoking token families: one token (RFC 7009), one grant, a deleted client's, an erased user's. */
import { type SQL, sql } from "drizzle-orm";
import { type AuditEventInput, auditInBatch, jsonBoolean, PREVIOUS_STATEMENT_CHANGED } from "../audit/events";
import { hashToken } from "../platform/crypto";
import { d1Statement } from "../platform/db";
import { nowIso } from "../platform/env";
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
  const fields: Record<string, SQL> = { "$.target": sql`'oauth_grant:' || g.id`, "$.subjectUserId": sql`g.user_id` };
  // Right after the grant's UPDATE: whether this batch revoked it.
  if (event.entry.kind === "oauth.token.reuse")
    fields["$.details.family_revoked"] = jsonBoolean(PREVIOUS_STATEMENT_CHANGED);
  const [grant] = await env.DB.batch([
    env.DB.prepare(
      `UPDATE oauth_grants SET revoked_at = ?1, revoke_reason = ?2 WHERE id = ?3 AND revoked_at IS NULL
       RETURNING id, workspace_id, user_id, client_id`,
    ).bind(now, reason, grantId),
    d1Statement(
      env,
      auditInBatch(env, event.entry, {
        from: { source: sql`FROM oauth_grants g WHERE g.id = ${grantId}`, workspaceId: sql`g.workspace_id`, fields },
        onlyIf: event.onlyIfRevoked ? PREVIOUS_STATEMENT_CHANGED : undefined,
      }),
    ),
    env.DB.prepare(`UPDATE oauth_tokens SET revoked_at = ?1 WHERE grant_id = ?2 AND revoked_at IS NULL`).bind(
      now,
      grantId,
    ),
  ]);
  const row = grant?.results[0] as { id: string; workspace_id: string; user_id: string; client_id: string } | undefined;
  return row ? { grantId: row.id, workspaceId: row.workspace_id, userId: row.user_id, clientId: row.client_id } : null;
}

/** The statements that revoke every grant of a deleted client (the first answers the revoked grants). */
export function revokeGrantsOfClient(env: Env, clientId: string, now: string): D1PreparedStatement[] {
  return [
    env.DB.prepare(
      `UPDATE oauth_grants SET revoked_at = ?1, revoke_reason = 'client_deleted' WHERE client_id = ?2 AND revoked_at IS NULL
       RETURNING workspace_id, user_id`,
    ).bind(now, clientId),
    env.DB.prepare(
      `UPDATE oauth_tokens SET revoked_at = ?1 WHERE revoked_at IS NULL AND grant_id IN (SELECT id FROM oauth_grants WHERE client_id = ?2)`,
    ).bind(now, clientId),
    env.DB.prepare(`DELETE FROM oauth_codes WHERE client_id = ?1 AND consumed_at IS NULL`).bind(clientId),
  ];
}

/**
 * Erasure: revokes the user's grants (and so their tokens), forgets their consents and
 * drops their unused codes. Counts revoked grants plus removed consents.
 */
export async function eraseOAuthUser(env: Env, workspaceId: string, userId: string): Promise<{ oauth_grants: number }> {
  const now = nowIso();
  const [grants, , consents] = await env.DB.batch([
    env.DB.prepare(
      `UPDATE oauth_grants SET revoked_at = ?1, revoke_reason = 'user_erased' WHERE workspace_id = ?2 AND user_id = ?3 AND revoked_at IS NULL RETURNING id`,
    ).bind(now, workspaceId, userId),
    env.DB.prepare(
      `UPDATE oauth_tokens SET revoked_at = ?1 WHERE revoked_at IS NULL AND grant_id IN (SELECT id FROM oauth_grants WHERE workspace_id = ?2 AND user_id = ?3)`,
    ).bind(now, workspaceId, userId),
    env.DB.prepare(`DELETE FROM oauth_consents WHERE workspace_id = ?1 AND user_id = ?2 RETURNING id`).bind(
      workspaceId,
      userId,
    ),
    env.DB.prepare(`DELETE FROM oauth_codes WHERE workspace_id = ?1 AND user_id = ?2 AND consumed_at IS NULL`).bind(
      workspaceId,
      userId,
    ),
  ]);
  return { oauth_grants: (grants?.results.length ?? 0) + (consents?.results.length ?? 0) };
}
