-- D1 ignores PRAGMA foreign_keys in a migration; it defers the checks to the end instead. No table
-- references approvals, so dropping the old table cascades nowhere.
PRAGMA defer_foreign_keys=ON;--> statement-breakpoint
CREATE TABLE `__new_approvals` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`conversation_id` text NOT NULL,
	`turn_id` text NOT NULL,
	`tool_name` text NOT NULL,
	`input_digest` text NOT NULL,
	`requested_by` text,
	`requested_at` text NOT NULL,
	`expires_at` text NOT NULL,
	`state` text NOT NULL,
	`decided_by` text,
	`decided_at` text,
	`reason` text,
	FOREIGN KEY (`conversation_id`) REFERENCES `conversations`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
INSERT INTO `__new_approvals`("id", "workspace_id", "conversation_id", "turn_id", "tool_name", "input_digest", "requested_by", "requested_at", "expires_at", "state", "decided_by", "decided_at", "reason") SELECT "id", "workspace_id", "conversation_id", "turn_id", "tool_name", "input_digest", NULLIF("requested_by", ''), "requested_at", "expires_at", "state", "decided_by", "decided_at", "reason" FROM `approvals`;--> statement-breakpoint
DROP TABLE `approvals`;--> statement-breakpoint
ALTER TABLE `__new_approvals` RENAME TO `approvals`;--> statement-breakpoint
PRAGMA defer_foreign_keys=OFF;--> statement-breakpoint
CREATE INDEX `approvals_pending_idx` ON `approvals` (`state`,`conversation_id`,`requested_at`);--> statement-breakpoint
CREATE INDEX `approvals_turn_idx` ON `approvals` (`conversation_id`,`turn_id`);--> statement-breakpoint
CREATE INDEX `approvals_requested_by_idx` ON `approvals` (`requested_by`);--> statement-breakpoint
CREATE INDEX `approvals_decided_by_idx` ON `approvals` (`decided_by`);