CREATE TABLE `mcp_custom_integrations` (
	`workspace_id` text NOT NULL,
	`slug` text NOT NULL,
	`name` text NOT NULL,
	`url` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`headers_sealed` text DEFAULT '{}' NOT NULL,
	`created_at` text NOT NULL,
	PRIMARY KEY(`workspace_id`, `slug`),
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE no action
);
