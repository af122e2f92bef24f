import { index, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { createdAt } from "../db/columns";
import { workspaceRef, workspaceRow } from "../workspace/tables";

/**
 * A workspace's own MCP server (`t:<slug>`): its URL and the headers it is called with, each
 * value sealed (AES-GCM, platform/secret-box, bound to the workspace and slug). Installed for
 * the workspace through `workspace_mcp_servers` like a catalogue server.
 */
export const mcpCustomIntegrations = sqliteTable(
  "mcp_custom_integrations",
  {
    workspaceId: workspaceRef(),
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
    ...workspaceRow(),
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
