-- First-party OAuth clients are defined by the platform, never through registration.
-- svc_client_cli: the official command-line client. A public client (PKCE only) whose
-- loopback redirect URIs accept any port at authorize time (RFC 8252). It may request every
-- scope but svc:computer, and skips the consent screen.
INSERT INTO `oauth_clients` (`client_id`, `workspace_id`, `created_by`, `name`, `redirect_uris`, `scopes`, `grant_types`, `response_types`, `auth_method`, `secret_hash`, `registration_token_hash`, `first_party`, `issued_at`, `created_at`, `updated_at`, `disabled_at`)
VALUES (
  'svc_client_cli', NULL, NULL, 'Command-line client',
  '["http://127.0.0.1/callback","http://localhost/callback"]',
  '["admin","agents:read","agents:write","billing:read","conversations:read","conversations:write","documents:read","documents:write","email:read","memory:read","memory:write","profile:read"]',
  '["authorization_code","refresh_token"]',
  '["code"]',
  'none', NULL, NULL, 1, 1767225600, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', NULL
);
