-- The platform's skill and MCP-server catalogues. Workspaces install entries from here
-- (PUT /v1/api/skills/{slug}, PUT /v1/api/mcp/servers/{slug}); nothing is installed by default.
INSERT INTO `skills` (`slug`, `name`, `description`, `created_at`) VALUES
  ('web-search', 'Web search', 'Searches the public web and answers with cited sources.', '2026-11-22T00:00:00.000Z'),
  ('web-reader', 'Web page reader', 'Fetches a web page by URL and reads its main text.', '2026-11-22T00:00:00.000Z'),
  ('code-interpreter', 'Code interpreter', 'Runs Python in a sandbox for calculations, data analysis and charts.', '2026-11-22T00:00:00.000Z'),
  ('document-reader', 'Document reader', 'Reads PDF, Word and spreadsheet files shared in a conversation.', '2026-11-22T00:00:00.000Z'),
  ('image-generation', 'Image generation', 'Creates illustrations and diagrams from a description.', '2026-11-22T00:00:00.000Z'),
  ('deep-research', 'Deep research', 'Plans a multi-step investigation and writes a sourced report.', '2026-11-22T00:00:00.000Z');
--> statement-breakpoint
INSERT INTO `mcp_servers` (`slug`, `name`, `description`, `url`, `created_at`) VALUES
  ('github', 'GitHub', 'Repositories, issues, pull requests and code search.', 'https://api.githubcopilot.com/mcp/', '2026-11-22T00:00:00.000Z'),
  ('linear', 'Linear', 'Issues, projects and cycles of a Linear workspace.', 'https://mcp.linear.app/mcp', '2026-11-22T00:00:00.000Z'),
  ('notion', 'Notion', 'Search, read and update Notion pages and databases.', 'https://mcp.notion.com/mcp', '2026-11-22T00:00:00.000Z'),
  ('sentry', 'Sentry', 'Errors, issues and releases from Sentry.', 'https://mcp.sentry.dev/mcp', '2026-11-22T00:00:00.000Z'),
  ('atlassian', 'Atlassian', 'Jira issues and Confluence pages.', 'https://mcp.atlassian.com/v1/sse', '2026-11-22T00:00:00.000Z'),
  ('stripe', 'Stripe', 'Customers, payments, invoices and subscriptions in Stripe.', 'https://mcp.stripe.com', '2026-11-22T00:00:00.000Z');
