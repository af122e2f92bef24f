ALTER TABLE `oauth_clients` ADD `document_fetched_at` text;--> statement-breakpoint
ALTER TABLE `oauth_clients` ADD `document_expires_at` text;--> statement-breakpoint
ALTER TABLE `oauth_codes` ADD `resource` text;--> statement-breakpoint
ALTER TABLE `oauth_grants` ADD `resource` text;