CREATE TABLE `events` (
	`seq` integer PRIMARY KEY NOT NULL,
	`id` text NOT NULL,
	`occurred_at` text NOT NULL,
	`kind` text NOT NULL,
	`outcome` text NOT NULL,
	`actor_kind` text NOT NULL,
	`actor_id` text,
	`agent_id` text,
	`conversation_id` text,
	`target` text NOT NULL,
	`intent` text NOT NULL,
	`subject_user_id` text,
	`details` text NOT NULL,
	`salt` text,
	`details_digest` text NOT NULL,
	`prev_hash` text NOT NULL,
	`hash` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `events_occurred_idx` ON `events` (`occurred_at`);--> statement-breakpoint
CREATE INDEX `events_kind_idx` ON `events` (`kind`);--> statement-breakpoint
CREATE INDEX `events_actor_idx` ON `events` (`actor_id`);--> statement-breakpoint
CREATE INDEX `events_subject_idx` ON `events` (`subject_user_id`);