CREATE TABLE `billing_accounts` (
	`workspace_id` text PRIMARY KEY NOT NULL,
	`plan_slug` text DEFAULT 'free' NOT NULL,
	`status` text DEFAULT 'none' NOT NULL,
	`current_period_end` text,
	`stripe_customer_id` text,
	`stripe_subscription_id` text,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`plan_slug`) REFERENCES `plans`(`slug`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `billing_accounts_stripe_customer_id_unique` ON `billing_accounts` (`stripe_customer_id`);--> statement-breakpoint
CREATE TABLE `credit_ledger` (
	`id` text PRIMARY KEY NOT NULL,
	`workspace_id` text NOT NULL,
	`amount` integer NOT NULL,
	`kind` text NOT NULL,
	`reference` text NOT NULL,
	`created_at` text NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `credit_ledger_reference_idx` ON `credit_ledger` (`workspace_id`,`kind`,`reference`);--> statement-breakpoint
CREATE INDEX `credit_ledger_workspace_idx` ON `credit_ledger` (`workspace_id`,`id`,`amount`);--> statement-breakpoint
CREATE TABLE `credit_packs` (
	`slug` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`credits` integer NOT NULL,
	`position` integer NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `plans` (
	`slug` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`monthly_credits` integer NOT NULL,
	`active` integer DEFAULT true NOT NULL,
	`position` integer NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `stripe_events` (
	`id` text PRIMARY KEY NOT NULL,
	`type` text NOT NULL,
	`workspace_id` text,
	`received_at` text NOT NULL
);
