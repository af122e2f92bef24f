/**
 * Every D1 table, as Drizzle sees it. Areas read this as shared knowledge but change their
 * own tables only through their own service. `npm run db:generate` turns changes here into
 * a new SQL migration under migrations/.
 */
import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

const createdAt = () => text("created_at").notNull();

export const workspaces = sqliteTable("workspaces", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  /** URL handle; globally unique. */
  slug: text("slug").notNull().unique(),
  /** Current email slug (mailbox addresses are `<localpart>-<email_slug>@<domain>`). */
  emailSlug: text("email_slug").notNull(),
  createdAt: createdAt(),
});

/**
 * Registry of email slugs, current and retired. A retired slug keeps routing to its
 * workspace (and stays unavailable to others) until `routes_until`.
 */
export const emailSlugs = sqliteTable("email_slugs", {
  slug: text("slug").primaryKey(),
  workspaceId: text("workspace_id")
    .notNull()
    .references(() => workspaces.id),
  routesUntil: text("routes_until"),
  createdAt: createdAt(),
});

export const users = sqliteTable(
  "users",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    /** Sign-in name, unique across the service; null once the user is erased. */
    email: text("email").unique(),
    name: text("name"),
    role: text("role", { enum: ["admin", "member"] }).notNull(),
    passwordHash: text("password_hash"),
    createdAt: createdAt(),
    erasedAt: text("erased_at"),
  },
  (t) => [index("users_workspace_idx").on(t.workspaceId)],
);

/** Personal access tokens, stored by SHA-256 only. */
export const apiTokens = sqliteTable(
  "api_tokens",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    name: text("name").notNull(),
    tokenHash: text("token_hash").notNull().unique(),
    /** JSON array of scope strings. */
    scopes: text("scopes").notNull(),
    createdAt: createdAt(),
    expiresAt: text("expires_at"),
    revokedAt: text("revoked_at"),
    lastUsedAt: text("last_used_at"),
  },
  (t) => [index("api_tokens_workspace_idx").on(t.workspaceId), index("api_tokens_user_idx").on(t.userId)],
);

/** Browser sign-in sessions (`svc_session` cookie), stored by SHA-256 only. */
export const sessions = sqliteTable(
  "sessions",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    tokenHash: text("token_hash").notNull().unique(),
    createdAt: createdAt(),
    expiresAt: text("expires_at").notNull(),
    revokedAt: text("revoked_at"),
    lastUsedAt: text("last_used_at"),
  },
  (t) => [index("sessions_user_idx").on(t.userId)],
);

export const agents = sqliteTable(
  "agents",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    slug: text("slug").notNull(),
    displayName: text("display_name").notNull(),
    description: text("description"),
    instructions: text("instructions"),
    instructionsIsDefault: integer("instructions_is_default", { mode: "boolean" }).notNull(),
    tone: text("tone"),
    verbosity: text("verbosity"),
    /** JSON arrays of strings. */
    aliases: text("aliases").notNull().default("[]"),
    cautions: text("cautions").notNull().default("[]"),
    languages: text("languages").notNull().default("[]"),
    skills: text("skills").notNull().default("[]"),
    mcpServers: text("mcp_servers").notNull().default("[]"),
    runtimeProfile: text("runtime_profile").notNull(),
    deliveryMode: text("delivery_mode").notNull(),
    model: text("model"),
    avatarUrl: text("avatar_url"),
    status: text("status", { enum: ["enabled", "disabled"] }).notNull(),
    isDefault: integer("is_default", { mode: "boolean" }).notNull(),
    createdAt: createdAt(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [
    uniqueIndex("agents_workspace_slug_idx").on(t.workspaceId, t.slug),
    // At most one default agent per workspace, whatever the concurrency.
    uniqueIndex("agents_one_default_idx").on(t.workspaceId).where(sql`is_default = 1`),
  ],
);

/**
 * Every handle (slug or alias) of every agent, so that the database itself keeps
 * handles unique within a workspace.
 */
export const agentHandles = sqliteTable(
  "agent_handles",
  {
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    handle: text("handle").notNull(),
    agentId: text("agent_id")
      .notNull()
      .references(() => agents.id),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.handle] }), index("agent_handles_agent_idx").on(t.agentId)],
);

// ---- Agents area: skill and MCP-server catalogues and their per-workspace installs ----

/** The platform's skill catalogue (seeded by migration; the same for every workspace). */
export const skills = sqliteTable("skills", {
  slug: text("slug").primaryKey(),
  name: text("name").notNull(),
  description: text("description").notNull(),
  createdAt: createdAt(),
});

/** Skills a workspace has installed; an agent's skill subset may only name these. */
export const workspaceSkills = sqliteTable(
  "workspace_skills",
  {
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    slug: text("slug")
      .notNull()
      .references(() => skills.slug),
    installedAt: text("installed_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.slug] })],
);

/** The platform's MCP-server catalogue (seeded by migration). */
export const mcpServers = sqliteTable("mcp_servers", {
  slug: text("slug").primaryKey(),
  name: text("name").notNull(),
  description: text("description").notNull(),
  url: text("url").notNull(),
  createdAt: createdAt(),
});

/**
 * MCP servers a workspace has installed. No foreign key on `slug`: a workspace's custom
 * integrations (`t:<slug>`, owned by the MCP area) are installed here too.
 */
export const workspaceMcpServers = sqliteTable(
  "workspace_mcp_servers",
  {
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    slug: text("slug").notNull(),
    installedAt: text("installed_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.slug] })],
);

// ---------------------------------------------------------------------------------------
// OAuth authorization server (src/oauth). Every secret (client secret, registration access
// token, code, access and refresh token) is stored as SHA-256 hex only.

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

/** What a user has approved for a third-party client; asked again when the scopes grow. */
export const oauthConsents = sqliteTable(
  "oauth_consents",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    clientId: text("client_id")
      .notNull()
      .references(() => oauthClients.clientId),
    /** JSON array of scope strings. */
    scopes: text("scopes").notNull(),
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
    clientId: text("client_id")
      .notNull()
      .references(() => oauthClients.clientId),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
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
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    clientId: text("client_id")
      .notNull()
      .references(() => oauthClients.clientId),
    /** JSON array of the scopes granted at authorize; kept by every rotation. */
    scopes: text("scopes").notNull(),
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
    grantId: text("grant_id")
      .notNull()
      .references(() => oauthGrants.id),
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

// ---------------------------------------------------------------------------------------
// Audit outbox (src/audit): events whose append to the workspace's AuditLog failed after
// their state change was committed. The scheduled handler delivers them, oldest first.

export const auditOutbox = sqliteTable(
  "audit_outbox",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id").notNull(),
    /** The AppendEvent as JSON, with its original occurred_at. */
    event: text("event").notNull(),
    createdAt: createdAt(),
    attempts: integer("attempts").notNull().default(0),
    lastError: text("last_error"),
  },
  (t) => [index("audit_outbox_workspace_idx").on(t.workspaceId, t.id)],
);

// ---------------------------------------------------------------------------------------
// Billing (src/billing): the plan and pack catalogues (seeded by migration), each
// workspace's Stripe link and plan, the append-only credit ledger, and the Stripe events
// already processed.

export const plans = sqliteTable("plans", {
  slug: text("slug").primaryKey(),
  name: text("name").notNull(),
  monthlyCredits: integer("monthly_credits").notNull(),
  active: integer("active", { mode: "boolean" }).notNull().default(true),
  position: integer("position").notNull(),
  createdAt: createdAt(),
});

export const creditPacks = sqliteTable("credit_packs", {
  slug: text("slug").primaryKey(),
  name: text("name").notNull(),
  credits: integer("credits").notNull(),
  position: integer("position").notNull(),
  createdAt: createdAt(),
});

/**
 * A workspace's billing state; no row means the `free` plan and no Stripe customer. The
 * customer id is the only thing kept about the payer; it is claimed once per workspace.
 */
export const billingAccounts = sqliteTable("billing_accounts", {
  workspaceId: text("workspace_id")
    .primaryKey()
    .references(() => workspaces.id),
  planSlug: text("plan_slug")
    .notNull()
    .default("free")
    .references(() => plans.slug),
  /** Stripe's subscription status, or `none` when the workspace never subscribed. */
  status: text("status").notNull().default("none"),
  currentPeriodEnd: text("current_period_end"),
  stripeCustomerId: text("stripe_customer_id").unique(),
  stripeSubscriptionId: text("stripe_subscription_id"),
  updatedAt: text("updated_at").notNull(),
});

/** Append-only; the balance is the sum of `amount`. A (workspace, kind, reference) is written once. */
export const creditLedger = sqliteTable(
  "credit_ledger",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    amount: integer("amount").notNull(),
    kind: text("kind", {
      enum: ["monthly_grant", "plan_grant", "topup", "usage", "refund", "dispute", "adjustment"],
    }).notNull(),
    reference: text("reference").notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex("credit_ledger_reference_idx").on(t.workspaceId, t.kind, t.reference),
    // Newest-first listing by id, and the balance SUM without touching the table.
    index("credit_ledger_workspace_idx").on(t.workspaceId, t.id, t.amount),
  ],
);

/** Stripe events already processed, written in the same batch as their effect. */
export const stripeEvents = sqliteTable("stripe_events", {
  id: text("id").primaryKey(),
  type: text("type").notNull(),
  workspaceId: text("workspace_id"),
  receivedAt: text("received_at").notNull(),
});

// ---------------------------------------------------------------------------------------
// Conversations (src/conversations) and the runtime's turns.

export const conversations = sqliteTable(
  "conversations",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    title: text("title"),
    mode: text("mode", { enum: ["standard", "fast"] }).notNull(),
    agentId: text("agent_id")
      .notNull()
      .references(() => agents.id),
    createdBy: text("created_by")
      .notNull()
      .references(() => users.id),
    /** Set while a turn runs (its assistant message id); a conditional UPDATE claims it, so turns never overlap. */
    turnId: text("turn_id"),
    turnStartedAt: text("turn_started_at"),
    createdAt: createdAt(),
    lastMessageAt: text("last_message_at").notNull(),
  },
  (t) => [index("conversations_workspace_idx").on(t.workspaceId, t.id)],
);

/** Who may read and post: the creator, everyone who posted, and those added. */
export const conversationParticipants = sqliteTable(
  "conversation_participants",
  {
    conversationId: text("conversation_id")
      .notNull()
      .references(() => conversations.id, { onDelete: "cascade" }),
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    workspaceId: text("workspace_id").notNull(),
    /** Copied from the conversation, so "my conversations, newest first" is one index range. */
    lastMessageAt: text("last_message_at").notNull(),
    addedAt: text("added_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.conversationId, t.userId] }),
    index("participants_user_recent_idx").on(t.userId, t.lastMessageAt, t.conversationId),
  ],
);

export const messages = sqliteTable(
  "messages",
  {
    id: text("id").primaryKey(),
    conversationId: text("conversation_id")
      .notNull()
      .references(() => conversations.id, { onDelete: "cascade" }),
    workspaceId: text("workspace_id").notNull(),
    role: text("role", { enum: ["user", "assistant"] }).notNull(),
    authorUserId: text("author_user_id").references(() => users.id),
    agentId: text("agent_id").references(() => agents.id),
    content: text("content").notNull(),
    /** JSON `[{ name, ok }]`. */
    toolCalls: text("tool_calls").notNull().default("[]"),
    /** JSON array of artifact ids. */
    artifactIds: text("artifact_ids").notNull().default("[]"),
    inputTokens: integer("input_tokens").notNull().default(0),
    outputTokens: integer("output_tokens").notNull().default(0),
    credits: integer("credits").notNull().default(0),
    createdAt: createdAt(),
  },
  (t) => [index("messages_conversation_idx").on(t.conversationId, t.id)],
);

// ---- Artifacts (src/artifacts): metadata here, bytes in R2 under `artifacts/<workspace>/<id>` ----

export const artifacts = sqliteTable(
  "artifacts",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    /** Null once detached (its conversation was deleted). */
    conversationId: text("conversation_id"),
    /** The user whose turn or upload produced it. */
    producerUserId: text("producer_user_id").references(() => users.id),
    agentId: text("agent_id"),
    name: text("name").notNull(),
    contentType: text("content_type").notNull(),
    size: integer("size").notNull(),
    /** Hex SHA-256 of the bytes: the strong ETag. */
    sha256: text("sha256").notNull(),
    caption: text("caption"),
    sensitive: integer("sensitive", { mode: "boolean" }).notNull().default(false),
    /** `upload`, `deliver_file`, `generate_image`, `research`. */
    source: text("source").notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    index("artifacts_workspace_idx").on(t.workspaceId, t.id),
    index("artifacts_conversation_idx").on(t.conversationId),
  ],
);

// ---- Memory (src/memory): facts about a user, and the agents a user froze ----

export const memoryFacts = sqliteTable(
  "memory_facts",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    agentSlug: text("agent_slug").notNull(),
    content: text("content").notNull(),
    createdAt: createdAt(),
  },
  (t) => [index("memory_facts_user_idx").on(t.workspaceId, t.userId, t.id)],
);

export const memoryFreezes = sqliteTable(
  "memory_freezes",
  {
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    agentSlug: text("agent_slug").notNull(),
    reason: text("reason"),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.userId, t.agentSlug] })],
);

// ---- Apps (src/apps): static bundles published by agents; bytes in R2 under `apps/<workspace>/<app>/<n>` ----

export const apps = sqliteTable(
  "apps",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    /** Unique per workspace among apps that are not destroyed. */
    slug: text("slug").notNull(),
    title: text("title").notNull(),
    /** `provisioning`, `running`, `sleeping`, `failed`, `destroyed`. */
    state: text("state", { enum: ["provisioning", "running", "sleeping", "failed", "destroyed"] }).notNull(),
    visibility: text("visibility", { enum: ["public", "private"] }).notNull(),
    runMode: text("run_mode").notNull().default("static"),
    /** Null once the conversation that published it is deleted; the app keeps running. */
    conversationId: text("conversation_id"),
    creatorUserId: text("creator_user_id").references(() => users.id),
    agentId: text("agent_id"),
    /** JSON `[{ path, content_type, size }]`; file n is stored under `apps/<workspace>/<app>/<n>`. */
    files: text("files").notNull(),
    size: integer("size").notNull(),
    createdAt: createdAt(),
    lastActivityAt: text("last_activity_at").notNull(),
    destroyedAt: text("destroyed_at"),
  },
  (t) => [
    uniqueIndex("apps_workspace_slug_idx").on(t.workspaceId, t.slug).where(sql`state <> 'destroyed'`),
    index("apps_workspace_activity_idx").on(t.workspaceId, t.lastActivityAt),
    index("apps_conversation_idx").on(t.conversationId),
    index("apps_state_activity_idx").on(t.state, t.lastActivityAt),
  ],
);

// ---- Team chat (src/teamchat): one Slack install per workspace ----

export const slackInstalls = sqliteTable(
  "slack_installs",
  {
    workspaceId: text("workspace_id")
      .primaryKey()
      .references(() => workspaces.id),
    teamId: text("team_id").notNull(),
    teamName: text("team_name"),
    botUserId: text("bot_user_id"),
    /** The bot token, sealed by platform/secret-box (AES-GCM, bound to the workspace id); null once uninstalled. */
    botTokenSealed: text("bot_token_sealed"),
    scopes: text("scopes").notNull().default(""),
    installedBy: text("installed_by").references(() => users.id),
    installedAt: text("installed_at").notNull(),
    /** False after an uninstall here or Slack's `app_uninstalled` / `tokens_revoked`. */
    live: integer("live", { mode: "boolean" }).notNull().default(true),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("slack_installs_team_idx").on(t.teamId)],
);

/** Install states already redeemed at the callback: a state works once (rows pruned after they expire). */
export const slackStateUses = sqliteTable("slack_state_uses", {
  nonce: text("nonce").primaryKey(),
  expiresAt: text("expires_at").notNull(),
});

// ---- Business profile (src/profile): the workspace's website, what its crawl found, and the admin's overrides ----

export const businessProfiles = sqliteTable(
  "business_profiles",
  {
    workspaceId: text("workspace_id")
      .primaryKey()
      .references(() => workspaces.id),
    /** Normalized (lowercase ASCII, no scheme, port, path or leading `www.`); null before one is set. */
    domain: text("domain"),
    /** `never`, `pending`, `ok` or `error`. */
    crawlStatus: text("crawl_status").notNull().default("never"),
    lastError: text("last_error"),
    crawledAt: text("crawled_at"),
    /** The crawl the profile waits for: a queued message carrying another id is stale and dropped. */
    crawlId: text("crawl_id"),
    crawlRequestedAt: text("crawl_requested_at"),
    /** What the last crawl found, JSON `DiscoveredProfile` (never overwritten by an override). */
    discovered: text("discovered").notNull().default("{}"),
    /** The admin's overrides, JSON field → value; a field absent here shows the discovered value. */
    overrides: text("overrides").notNull().default("{}"),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("business_profiles_refresh_idx").on(t.crawlRequestedAt)],
);

/**
 * A workspace mailbox (`<localpart>-<email slug>@<EMAIL_DOMAIN>`). The system endpoint `team`
 * is made at sign-up; admins add custom ones. JSON columns hold the policies.
 */
export const emailEndpoints = sqliteTable(
  "email_endpoints",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    localpart: text("localpart").notNull(),
    kind: text("kind").notNull(),
    plane: text("plane").notNull(),
    agentId: text("agent_id"),
    enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
    replyPolicy: text("reply_policy").notNull(),
    senderPolicy: text("sender_policy").notNull(),
    allowPatterns: text("allow_patterns").notNull().default("[]"),
    allowEscalation: integer("allow_escalation", { mode: "boolean" }).notNull().default(false),
    categoryPolicy: text("category_policy").notNull().default("{}"),
    deliverTo: text("deliver_to"),
    defaultReplyLang: text("default_reply_lang"),
    instructions: text("instructions"),
    maxTurnsPerDay: integer("max_turns_per_day"),
    maxTurnsPerSenderDay: integer("max_turns_per_sender_day"),
    spamScoreMax: integer("spam_score_max_pct"),
    createdAt: createdAt(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [uniqueIndex("email_endpoints_localpart_idx").on(t.workspaceId, t.localpart)],
);

/**
 * One inbound or outbound mail. Inbound: the raw message in R2 (`raw_key`), what triage
 * found, and its handling state. Outbound: a drafted reply to `reply_to_id`, its review and send.
 */
export const emailMessages = sqliteTable(
  "email_messages",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    endpointId: text("endpoint_id").notNull(),
    direction: text("direction").notNull(),
    replyToId: text("reply_to_id"),
    fromAddr: text("from_addr").notNull(),
    toAddrs: text("to_addrs").notNull(),
    subject: text("subject"),
    messageIdHeader: text("message_id_header"),
    referencesHeader: text("references_header"),
    rawKey: text("raw_key"),
    size: integer("size").notNull().default(0),
    unrouted: integer("unrouted", { mode: "boolean" }).notNull().default(false),
    autoSubmitted: integer("auto_submitted", { mode: "boolean" }).notNull().default(false),
    dmarc: text("dmarc").notNull().default("none"),
    handlingState: text("handling_state").notNull(),
    llmCategory: text("llm_category"),
    llmSummary: text("llm_summary"),
    language: text("language"),
    spamScore: integer("spam_score_pct"),
    agentId: text("agent_id"),
    conversationId: text("conversation_id"),
    reviewOwnerId: text("review_owner_id"),
    body: text("body"),
    lastError: text("last_error"),
    occurredAt: text("occurred_at").notNull(),
    reviewedAt: text("reviewed_at"),
    sentAt: text("sent_at"),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [
    index("email_messages_endpoint_idx").on(t.endpointId, t.direction, t.handlingState),
    index("email_messages_owner_idx").on(t.reviewOwnerId, t.handlingState),
    index("email_messages_state_idx").on(t.handlingState, t.occurredAt),
  ],
);

/**
 * A workspace's own MCP server (`t:<slug>`): its URL and the headers it is called with, each
 * value sealed (AES-GCM, platform/secret-box, bound to the workspace and slug). Installed for
 * the workspace through `workspace_mcp_servers` like a catalogue server.
 */
export const mcpCustomIntegrations = sqliteTable(
  "mcp_custom_integrations",
  {
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    slug: text("slug").notNull(),
    name: text("name").notNull(),
    url: text("url").notNull(),
    description: text("description").notNull().default(""),
    /** JSON object header name → sealed value; never returned. */
    headersSealed: text("headers_sealed").notNull().default("{}"),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.slug] })],
);

/**
 * A connector (a program inside a customer's network that reaches the service over mTLS):
 * made `pending` with a one-time enrollment token (SHA-256 only, 15 minutes), `enrolled` once
 * that token is redeemed for a certificate, `revoked` by an admin.
 */
export const mcpConnectors = sqliteTable(
  "mcp_connectors",
  {
    id: text("id").primaryKey(),
    workspaceId: text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    name: text("name").notNull(),
    status: text("status").notNull(),
    tokenHash: text("token_hash"),
    tokenExpiresAt: text("token_expires_at").notNull(),
    certSerial: text("cert_serial"),
    certExpiresAt: text("cert_expires_at"),
    createdAt: createdAt(),
    enrolledAt: text("enrolled_at"),
    revokedAt: text("revoked_at"),
  },
  (t) => [
    index("mcp_connectors_workspace_idx").on(t.workspaceId, t.createdAt),
    uniqueIndex("mcp_connectors_token_idx").on(t.tokenHash),
  ],
);
