/**
 * The OAuth authorization server's tables. Every secret (client secret, registration access
 * token, code, access and refresh token) is stored as SHA-256 hex only.
 */
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { createdAt, ref } from "../db/columns";
import { userRef, users } from "../identity/tables";
import { workspaceRef, workspaceRow, workspaces } from "../workspace/tables";

/**
 * OAuth clients. Registered clients belong to the workspace that registered them (the
 * "account" of the 50-client cap); platform clients (`first_party`) have no workspace and
 * are seeded by a migration. A disabled client is kept for the audit trail.
 */
export const oauthClients = sqliteTable(
  "oauth_clients",
  {
    /** `svc_client_<uuid without dashes>`, or a fixed id such as `svc_client_cli`. */
    clientId: text("client_id").primaryKey(),
    workspaceId: text("workspace_id").references(() => workspaces.id),
    createdBy: text("created_by").references(() => users.id),
    name: text("name").notNull(),
    /** JSON arrays of strings. */
    redirectUris: text("redirect_uris").notNull(),
    scopes: text("scopes").notNull(),
    grantTypes: text("grant_types").notNull(),
    responseTypes: text("response_types").notNull(),
    authMethod: text("auth_method", { enum: ["none", "client_secret_post", "client_secret_basic"] }).notNull(),
    secretHash: text("secret_hash"),
    registrationTokenHash: text("registration_token_hash").unique(),
    firstParty: integer("first_party", { mode: "boolean" }).notNull().default(false),
    /** Unix seconds (RFC 7591 `client_id_issued_at`). */
    issuedAt: integer("issued_at").notNull(),
    createdAt: createdAt(),
    updatedAt: text("updated_at").notNull(),
    disabledAt: text("disabled_at"),
    /**
     * Clients identified by a Client ID Metadata Document (the `client_id` is its https URL):
     * when the document was last fetched, and until when that copy may be used (its HTTP
     * caching headers, at most 24 hours). Null for registered and first-party clients.
     */
    documentFetchedAt: text("document_fetched_at"),
    documentExpiresAt: text("document_expires_at"),
  },
  (t) => [index("oauth_clients_workspace_idx").on(t.workspaceId)],
);

/**
 * What a user approved for a client in a workspace: the scopes, a JSON array of strings (a
 * grant keeps those of its authorization through every rotation).
 */
const userApproval = () => ({
  ...workspaceRow(),
  userId: userRef(),
  clientId: ref("client_id", () => oauthClients.clientId),
  scopes: text("scopes").notNull(),
});

/** What a user has approved for a third-party client; asked again when the scopes grow. */
export const oauthConsents = sqliteTable(
  "oauth_consents",
  {
    ...userApproval(),
    createdAt: createdAt(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [uniqueIndex("oauth_consents_user_client_idx").on(t.userId, t.clientId)],
);

/** Authorization codes: single use (`consumed_at`), bound to client, redirect URI, user, scopes and PKCE challenge. */
export const oauthCodes = sqliteTable(
  "oauth_codes",
  {
    id: text("id").primaryKey(),
    codeHash: text("code_hash").notNull().unique(),
    clientId: ref("client_id", () => oauthClients.clientId),
    workspaceId: workspaceRef(),
    userId: userRef(),
    redirectUri: text("redirect_uri").notNull(),
    scopes: text("scopes").notNull(),
    /** base64url(SHA-256(code_verifier)). */
    codeChallenge: text("code_challenge").notNull(),
    createdAt: createdAt(),
    expiresAt: text("expires_at").notNull(),
    consumedAt: text("consumed_at"),
    /** The grant (token family) the exchange created, so a replay can revoke it. */
    grantId: text("grant_id"),
    /** RFC 8707 `resource` of the authorization request (canonical form), or null. */
    resource: text("resource"),
  },
  (t) => [index("oauth_codes_user_idx").on(t.userId)],
);

/** A grant is one token family: every access and refresh token descending from one code. */
export const oauthGrants = sqliteTable(
  "oauth_grants",
  {
    ...userApproval(),
    createdAt: createdAt(),
    revokedAt: text("revoked_at"),
    /** `revoked`, `refresh_reuse`, `code_reuse`, `client_deleted` or `user_erased`. */
    revokeReason: text("revoke_reason"),
    /**
     * RFC 8707: the one resource every token of the family is for (canonical form), or null
     * for tokens usable on the whole API. Kept by every rotation.
     */
    resource: text("resource"),
  },
  (t) => [index("oauth_grants_user_idx").on(t.userId), index("oauth_grants_client_idx").on(t.clientId)],
);

/** Access and refresh tokens of a grant. A rotated refresh token is revoked and names its successor. */
export const oauthTokens = sqliteTable(
  "oauth_tokens",
  {
    id: text("id").primaryKey(),
    grantId: ref("grant_id", () => oauthGrants.id),
    kind: text("kind", { enum: ["access", "refresh"] }).notNull(),
    tokenHash: text("token_hash").notNull().unique(),
    createdAt: createdAt(),
    expiresAt: text("expires_at").notNull(),
    revokedAt: text("revoked_at"),
    /** For a rotated refresh token: the id of the refresh token that replaced it. */
    replacedBy: text("replaced_by"),
  },
  (t) => [index("oauth_tokens_grant_idx").on(t.grantId)],
);
