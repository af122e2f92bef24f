CREATE TABLE `mcp_connectors` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`name` text NOT NULL,
	`status` text NOT NULL,
	`token_hash` text,
	`token_expires_at` text NOT NULL,
	`cert_serial` text,
	`cert_expires_at` text,
	`created_at` text NOT NULL,
	`enrolled_at` text,
	`revoked_at` text,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `mcp_connectors_workspace_idx` ON `mcp_connectors` (`workspace_id`,`created_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `mcp_connectors_token_idx` ON `mcp_connectors` (`token_hash`);