CREATE TABLE `approvals` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`conversation_id` text NOT NULL,
	`turn_id` text NOT NULL,
	`tool_name` text NOT NULL,
	`input_digest` text NOT NULL,
	`requested_by` text NOT NULL,
	`requested_at` text NOT NULL,
	`expires_at` text NOT NULL,
	`state` text NOT NULL,
	`decided_by` text,
	`decided_at` text,
	`reason` text,
	FOREIGN KEY (`conversation_id`) REFERENCES `conversations`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `approvals_pending_idx` ON `approvals` (`state`,`conversation_id`,`requested_at`);--> statement-breakpoint
CREATE INDEX `approvals_turn_idx` ON `approvals` (`conversation_id`,`turn_id`);--> statement-breakpoint
ALTER TABLE `agents` ADD `approval_required` text DEFAULT '[]' NOT NULL;