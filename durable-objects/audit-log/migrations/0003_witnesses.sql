CREATE TABLE `witness_rounds` (
	`id` integer PRIMARY KEY NOT NULL,
	`queued_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `witnesses` (
	`witness` text PRIMARY KEY NOT NULL,
	`size` integer DEFAULT 0 NOT NULL,
	`root` text,
	`cosignature` text,
	`conflict_size` integer,
	`conflict_at` text
);
