CREATE TABLE `business_profiles` (
	`workspace_id` text PRIMARY KEY NOT NULL,
	`domain` text,
	`crawl_status` text DEFAULT 'never' NOT NULL,
	`last_error` text,
	`crawled_at` text,
	`crawl_id` text,
	`crawl_requested_at` text,
	`discovered` text DEFAULT '{}' NOT NULL,
	`overrides` text DEFAULT '{}' NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `business_profiles_refresh_idx` ON `business_profiles` (`crawl_requested_at`);