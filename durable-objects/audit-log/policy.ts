import type { Json, JsonObject } from "./types";

/**
 * The details each audit event kind may carry: an allow-list, so a field that is not named
 * here (a token, a secret, a password, a header) can never reach the log, whatever a caller
 * passes. Kinds not listed keep no details at all. Each area adds its kinds here.
 *
 * Personal data (emails, names) is allowed only in `details`, which erasure redacts;
 * `target` and `intent` carry ids and verbs only.
 */
export const AUDIT_DETAIL_FIELDS: Readonly<Record<string, readonly string[]>> = {
  // access and identity
  "access.denied": ["method", "path", "required"],
  "workspace.signup": ["workspace_name", "slug", "email", "name"],
  "workspace.slug": ["slug", "previous_slug", "email_slug", "previous_email_slug_routes_until"],
  "user.create": ["email", "name", "role"],
  "user.erase": ["reason", "counts", "self"],
  "token.create": ["name", "scopes", "user_id", "expires_at"],
  "token.revoke": ["name", "user_id"],
  "session.signin": ["email", "reason"],
  "session.signout": [],
  // local browser: ids, counts and method names only, never screenshots, page text or typed text
  "browser.connect": ["token_id"],
  "browser.disconnect": ["cause", "code", "token_id", "connected_at", "duration_ms"],
  "browser.ask": ["agent_slug", "steps", "tool_calls", "methods", "finish", "timeout_ms", "duration_ms"],
  // agents
  "agent.create": ["slug", "display_name", "aliases", "runtime_profile", "model", "avatar"],
  "agent.update": ["fields", "slug", "previous_slug"],
  // `reason` and what was removed when an uninstall or delete took an agent's only skill or MCP server
  "agent.disable": ["slug", "changed", "reason", "skill", "mcp_server"],
  "agent.widen": ["slug", "reason", "skill", "mcp_server"],
  "agent.enable": ["slug", "changed"],
  "agent.default": ["slug", "previous_default_id"],
  "agent.avatar": ["source", "content_type", "size", "sha256"],
  "agent.skills": ["skills", "previous_skills"],
  "agent.mcp": ["mcp_servers", "previous_mcp_servers"],
  "agent.suggest": ["profile_used", "draft_length"],
  "skill.install": ["slug", "changed"],
  "skill.uninstall": ["slug", "changed", "agents_updated"],
  "mcp.install": ["slug", "changed"],
  "mcp.uninstall": ["slug", "changed", "agents_updated"],
  // conversations: ids, modes and counts only, never message text
  "conversation.create": ["mode", "agent_slug"],
  "conversation.delete": [],
  "conversation.participant.add": ["user_id", "added"],
  "conversation.turn": ["message_id", "runtime_profile", "model", "steps", "tools", "finish", "usage", "credits"],
  // billing: slugs, Stripe object ids and amounts only, never card or customer details
  "billing.checkout": ["plan_slug", "session_id"],
  "billing.portal": ["session_id"],
  "billing.topup": ["pack_slug", "session_id"],
  "billing.customer": ["customer_id"],
  "billing.credit": ["ledger_kind", "amount", "reference", "event_id", "pack_slug", "plan_slug"],
  "billing.refund": ["ledger_kind", "amount", "reference", "event_id", "pack_slug", "charge_id"],
  "billing.plan": ["plan_slug", "previous_plan_slug", "status", "previous_status", "subscription_id", "event_id"],
  // memory: slugs and flags only, never a fact's content or a freeze's reason
  "memory.fact.create": ["agent_slug"],
  "memory.fact.delete": ["agent_slug"],
  "memory.freeze": ["agent_slug", "changed"],
  "memory.unfreeze": ["agent_slug", "changed"],
  // artifacts: ids in the target; metadata only, never the file name or its content
  "artifact.create": ["source", "content_type", "size", "sensitive"],
  "artifact.delete": ["source", "content_type", "size"],
  // apps: ids in the target; slug, visibility and sizes only, never a title or a file
  "app.publish": ["slug", "visibility", "files", "size"],
  "app.destroy": ["slug", "visibility", "size"],
  "app.sleep": [],
  // team chat: Slack ids only, never the bot token or a message's text
  "teamchat.install": ["team_id", "bot_user_id", "scopes", "reinstall"],
  "teamchat.uninstall": ["team_id", "cause", "revoked"],
  "teamchat.deliver": ["channel_id", "file_id", "size", "slack_error"],
  // business profile: field names only for an update; the crawl's outcome, never page content
  "profile.update": ["fields", "cleared", "domain_changed"],
  "profile.crawl": ["domain", "crawl_status", "pages", "truncated", "fields", "technologies", "error_code", "error"],
  // MCP custom integrations (header names only, never their values)
  "mcp.custom.create": ["slug", "url", "authenticated"],
  "mcp.custom.delete": ["slug"],
  "mcp.connector.create": ["name"],
  "mcp.connector.revoke": [],
  "mcp.connector.enroll": ["connector_id", "cert_serial", "cert_expires_at", "reason"],
  // Email (ids and verdicts only: never addresses, subjects or text)
  "email.endpoint.create": ["localpart"],
  "email.endpoint.update": ["fields"],
  "email.endpoint.delete": [],
  "email.receive": ["endpoint_id", "unrouted", "size", "auto_submitted", "dmarc"],
  "email.triage": [
    "endpoint_id",
    "state",
    "reason",
    "category",
    "spam_score",
    "dmarc",
    "reply_id",
    "agent_id",
    "credits",
    "steps",
  ],
  "email.review": ["action", "edited", "previous_state"],
  "email.send": ["reply_to_id", "threaded", "error"],
  // OAuth authorization server
  "oauth.client.register": [
    "client_id",
    "client_name",
    "redirect_uris",
    "scope",
    "token_endpoint_auth_method",
    "grant_types",
  ],
  "oauth.client.update": ["client_id", "client_name", "redirect_uris", "scope"],
  "oauth.client.delete": ["client_id", "revoked_grants"],
  "oauth.consent.grant": ["client_id", "client_name", "scopes"],
  "oauth.consent.deny": ["client_id", "client_name", "scopes"],
  "oauth.grant.revoke": ["client_id", "reason", "count"],
  "oauth.token.reuse": ["client_id", "token_kind", "family_revoked"],
  "oauth.token.issue": ["client_id", "scope"],
  "oauth.token.refresh": ["client_id", "scope"],
};

export function allowedDetails(kind: string, details: Record<string, unknown> | undefined): JsonObject {
  const allowed = AUDIT_DETAIL_FIELDS[kind];
  if (!allowed || !details) return {};
  const out: JsonObject = {};
  // A JSON round trip keeps only plain data (no functions, dates become strings).
  for (const key of allowed)
    if (details[key] !== undefined) out[key] = JSON.parse(JSON.stringify(details[key])) as Json;
  return out;
}
