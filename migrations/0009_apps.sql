CREATE TABLE `apps` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`slug` text NOT NULL,
	`title` text NOT NULL,
	`state` text NOT NULL,
	`visibility` text NOT NULL,
	`run_mode` text DEFAULT 'static' NOT NULL,
	`conversation_id` text,
	`creator_user_id` text,
	`agent_id` text,
	`files` text NOT NULL,
	`size` integer NOT NULL,
	`created_at` text NOT NULL,
	`last_activity_at` text NOT NULL,
	`destroyed_at` text,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`creator_user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `apps_workspace_slug_idx` ON `apps` (`workspace_id`,`slug`) WHERE state <> 'destroyed';--> statement-breakpoint
CREATE INDEX `apps_workspace_activity_idx` ON `apps` (`workspace_id`,`last_activity_at`);--> statement-breakpoint
CREATE INDEX `apps_conversation_idx` ON `apps` (`conversation_id`);--> statement-breakpoint
CREATE INDEX `apps_state_activity_idx` ON `apps` (`state`,`last_activity_at`);--> statement-breakpoint
CREATE TABLE `slack_installs` (
	`workspace_id` text PRIMARY KEY NOT NULL,
	`team_id` text NOT NULL,
	`team_name` text,
	`bot_user_id` text,
	`bot_token_sealed` text,
	`scopes` text DEFAULT '' NOT NULL,
	`installed_by` text,
	`installed_at` text NOT NULL,
	`live` integer DEFAULT true NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`installed_by`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `slack_installs_team_idx` ON `slack_installs` (`team_id`);--> statement-breakpoint
CREATE TABLE `slack_state_uses` (
	`nonce` text PRIMARY KEY NOT NULL,
	`expires_at` text NOT NULL
);
