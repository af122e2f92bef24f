ALTER TABLE `events` ADD `outbox_id` text;--> statement-breakpoint
CREATE UNIQUE INDEX `events_outbox_idx` ON `events` (`outbox_id`);