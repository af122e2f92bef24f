ALTER TABLE `conversations` ADD `client_id` text;--> statement-breakpoint
CREATE UNIQUE INDEX `conversations_client_id_idx` ON `conversations` (`workspace_id`,`created_by`,`client_id`);