CREATE TABLE `mcp_servers` (
	`slug` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`description` text NOT NULL,
	`url` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `skills` (
	`slug` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`description` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `workspace_mcp_servers` (
	`workspace_id` text NOT NULL,
	`slug` text NOT NULL,
	`installed_at` text NOT NULL,
	PRIMARY KEY(`workspace_id`, `slug`),
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `workspace_skills` (
	`workspace_id` text NOT NULL,
	`slug` text NOT NULL,
	`installed_at` text NOT NULL,
	PRIMARY KEY(`workspace_id`, `slug`),
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`slug`) REFERENCES `skills`(`slug`) ON UPDATE no action ON DELETE no action
);
