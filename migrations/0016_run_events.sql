CREATE TABLE `notification_configurations` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`name` text NOT NULL,
	`destination_type` text NOT NULL,
	`url` text NOT NULL,
	`enabled` integer DEFAULT true NOT NULL,
	`triggers` text NOT NULL,
	`secret_ciphertext` text NOT NULL,
	`created_by` text,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `notification_configurations_ws_idx` ON `notification_configurations` (`workspace_id`);--> statement-breakpoint
CREATE TABLE `notification_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`notification_id` text NOT NULL,
	`event_id` text,
	`trigger` text NOT NULL,
	`status` text NOT NULL,
	`body` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`response_status` integer,
	`error` text,
	`created_at` integer NOT NULL,
	`next_attempt_at` integer,
	`last_attempt_at` integer,
	`completed_at` integer,
	FOREIGN KEY (`notification_id`) REFERENCES `notification_configurations`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `notification_deliveries_nc_idx` ON `notification_deliveries` (`notification_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `notification_deliveries_due_idx` ON `notification_deliveries` (`next_attempt_at`) WHERE "notification_deliveries"."status" = 'pending';--> statement-breakpoint
CREATE TABLE `run_events` (
	`id` text PRIMARY KEY NOT NULL,
	`type` text,
	`org_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`run_id` text NOT NULL,
	`status` text NOT NULL,
	`occurred_at` integer NOT NULL,
	`data` text,
	`sent_at` integer,
	FOREIGN KEY (`run_id`) REFERENCES `runs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `run_events_unsent_idx` ON `run_events` (`occurred_at`) WHERE "run_events"."sent_at" IS NULL;--> statement-breakpoint
CREATE INDEX `run_events_run_idx` ON `run_events` (`run_id`);--> statement-breakpoint
CREATE TABLE `run_triggers` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`source_workspace_id` text NOT NULL,
	`created_by` text,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`source_workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `run_triggers_pair_idx` ON `run_triggers` (`workspace_id`,`source_workspace_id`);--> statement-breakpoint
CREATE INDEX `run_triggers_source_idx` ON `run_triggers` (`source_workspace_id`);--> statement-breakpoint
ALTER TABLE `runs` ADD `triggering_run_id` text;--> statement-breakpoint
CREATE INDEX `runs_org_created_idx` ON `runs` (`org_id`,`created_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `runs_ws_triggering_run_idx` ON `runs` (`workspace_id`,`triggering_run_id`);