/** The audit events the token endpoint writes; the grant's fields are filled in SQL. */
import { sql } from "drizzle-orm";
import type { AuditEventInput } from "../audit/events";
import { effectiveScopesSql } from "../auth/scopes";
import { oauthGrants, users } from "../db/schema";

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

/** The fields of an event about a grant, from its `oauth_grants` row. */
export const grantFields = {
  "$.target": sql`'oauth_grant:' || ${oauthGrants.id}`,
  "$.subjectUserId": sql`${oauthGrants.userId}`,
};

// The event of an issue or rotation is selected from the rows the same batch wrote: only the
// grant knows the workspace and user. `scope` is what the token response says: the grant's
// scopes within the user's role ceiling, by the rule the response uses (see grantableFor).
export const grantEventFields = {
  ...grantFields,
  "$.details.scope": effectiveScopesSql(sql`${oauthGrants.scopes}`, sql`${users.role}`),
};

/** The template of a token-endpoint event; the grant's fields are filled in SQL. */
export const tokenEvent = (kind: "oauth.token.issue" | "oauth.token.refresh", clientId: string): AuditEventInput => ({
  workspaceId: "",
  kind,
  actor: { kind: "oauth_client", id: clientId },
  intent: kind === "oauth.token.issue" ? "issue" : "rotate",
  details: { client_id: clientId, scope: "" },
});
