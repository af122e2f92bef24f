CREATE TABLE `messages` (
	`position` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`role` text NOT NULL,
	`author_user_id` text,
	`agent_id` text,
	`content` text NOT NULL,
	`parts` text NOT NULL,
	`tool_calls` text NOT NULL,
	`artifact_ids` text NOT NULL,
	`input_tokens` integer DEFAULT 0 NOT NULL,
	`output_tokens` integer DEFAULT 0 NOT NULL,
	`credits` integer DEFAULT 0 NOT NULL,
	`stopped` integer DEFAULT false NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `messages_id_unique` ON `messages` (`id`);--> statement-breakpoint
CREATE TABLE `meta` (
	`key` text PRIMARY KEY NOT NULL,
	`value` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `stream_events` (
	`turn_id` text NOT NULL,
	`seq` integer NOT NULL,
	`chunk` text NOT NULL,
	PRIMARY KEY(`turn_id`, `seq`)
);
--> statement-breakpoint
CREATE TABLE `turns` (
	`position` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`user_message_id` text NOT NULL,
	`state` text NOT NULL,
	`idempotency_key` text,
	`request_hash` text,
	`failure` text,
	`context` text NOT NULL,
	`started_at` text NOT NULL,
	`ended_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `turns_id_unique` ON `turns` (`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `turns_idempotency_key_unique` ON `turns` (`idempotency_key`);