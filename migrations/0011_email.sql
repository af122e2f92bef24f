CREATE TABLE `email_endpoints` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`localpart` text NOT NULL,
	`kind` text NOT NULL,
	`plane` text NOT NULL,
	`agent_id` text,
	`enabled` integer DEFAULT true NOT NULL,
	`reply_policy` text NOT NULL,
	`sender_policy` text NOT NULL,
	`allow_patterns` text DEFAULT '[]' NOT NULL,
	`allow_escalation` integer DEFAULT false NOT NULL,
	`category_policy` text DEFAULT '{}' NOT NULL,
	`deliver_to` text,
	`default_reply_lang` text,
	`instructions` text,
	`max_turns_per_day` integer,
	`max_turns_per_sender_day` integer,
	`spam_score_max_pct` integer,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `email_endpoints_localpart_idx` ON `email_endpoints` (`workspace_id`,`localpart`);--> statement-breakpoint
CREATE TABLE `email_messages` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`endpoint_id` text NOT NULL,
	`direction` text NOT NULL,
	`reply_to_id` text,
	`from_addr` text NOT NULL,
	`to_addrs` text NOT NULL,
	`subject` text,
	`message_id_header` text,
	`references_header` text,
	`raw_key` text,
	`size` integer DEFAULT 0 NOT NULL,
	`unrouted` integer DEFAULT false NOT NULL,
	`auto_submitted` integer DEFAULT false NOT NULL,
	`dmarc` text DEFAULT 'none' NOT NULL,
	`handling_state` text NOT NULL,
	`llm_category` text,
	`llm_summary` text,
	`language` text,
	`spam_score_pct` integer,
	`agent_id` text,
	`conversation_id` text,
	`review_owner_id` text,
	`body` text,
	`last_error` text,
	`occurred_at` text NOT NULL,
	`reviewed_at` text,
	`sent_at` text,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `email_messages_endpoint_idx` ON `email_messages` (`endpoint_id`,`direction`,`handling_state`);--> statement-breakpoint
CREATE INDEX `email_messages_owner_idx` ON `email_messages` (`review_owner_id`,`handling_state`);--> statement-breakpoint
CREATE INDEX `email_messages_state_idx` ON `email_messages` (`handling_state`,`occurred_at`);--> statement-breakpoint
-- Every existing workspace gets its system mailbox `team` (new ones get it at sign-up).
INSERT INTO `email_endpoints` (`id`, `workspace_id`, `localpart`, `kind`, `plane`, `reply_policy`, `sender_policy`, `created_at`, `updated_at`)
SELECT lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-'
         || substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6))),
       w.`id`, 'team', 'system', 'team', 'review', 'anyone', strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
FROM `workspaces` w
WHERE NOT EXISTS (SELECT 1 FROM `email_endpoints` e WHERE e.`workspace_id` = w.`id` AND e.`localpart` = 'team');
