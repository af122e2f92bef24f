ALTER TABLE `conversations` ADD `message_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Conversations from before rooms: their count from the messages they have in D1.
UPDATE `conversations` SET `message_count` = (SELECT count(*) FROM `messages` WHERE `messages`.`conversation_id` = `conversations`.`id`);
