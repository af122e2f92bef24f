/** The audit events the token endpoint writes; the grant's fields are filled in SQL. */
import type { AuditEventInput } from "../audit/events";

/**
 * The event of a replayed code or rotated refresh token: no signed-in caller, so the actor is
 * the client and the workspace the grant's. `family_revoked` is filled in the revoking batch.
 */
export const reuseEvent = (
  clientId: string,
  tokenKind: "code" | "refresh",
  workspaceId = "",
  subjectUserId?: string,
): AuditEventInput => ({
  workspaceId: workspaceId,
  subjectUserId,
  kind: "oauth.token.reuse",
  outcome: "denied",
  actor: { kind: "oauth_client", id: clientId },
  target: `oauth_client:${clientId}`,
  intent: "reuse",
  details: { client_id: clientId, token_kind: tokenKind, family_revoked: false },
});

// The event of an issue or rotation is selected from the rows the same batch wrote: only the
// grant knows the workspace and user. `scope` is what the token response says: the grant's
// scopes within the user's role ceiling (admin only while the user is an admin; see grantableFor).
// SQL text, not Drizzle: the token endpoint's batch is raw (see `auditStatement`).
const GRANTED_SCOPE = `(SELECT group_concat(j.value, ' ') FROM json_each(g.scopes) j
  WHERE j.value <> 'svc:computer' AND (j.value <> 'admin' OR u.role = 'admin'))`;
export const grantEventFields = {
  "$.target": "'oauth_grant:' || g.id",
  "$.subjectUserId": "g.user_id",
  "$.details.scope": GRANTED_SCOPE,
};

/** The template of a token-endpoint event; the grant's fields are filled in SQL. */
export const tokenEvent = (kind: "oauth.token.issue" | "oauth.token.refresh", clientId: string): AuditEventInput => ({
  workspaceId: "",
  kind,
  actor: { kind: "oauth_client", id: clientId },
  intent: kind === "oauth.token.issue" ? "issue" : "rotate",
  details: { client_id: clientId, scope: "" },
});
