CREATE TABLE `assessments` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`run_id` text NOT NULL,
	`status` text NOT NULL,
	`drifted_resources` text,
	`reason` text,
	`remediation_run_id` text,
	`created_by` text,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	`finished_at` integer,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `assessments_runId_unique` ON `assessments` (`run_id`);--> statement-breakpoint
CREATE INDEX `assessments_ws_idx` ON `assessments` (`workspace_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `schedule_occurrences` (
	`schedule_id` text NOT NULL,
	`occurrence_at` integer NOT NULL,
	`status` text NOT NULL,
	`run_id` text,
	`reason` text,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`schedule_id`, `occurrence_at`),
	FOREIGN KEY (`schedule_id`) REFERENCES `schedules`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `schedules` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`cron` text NOT NULL,
	`timezone` text NOT NULL,
	`operation` text NOT NULL,
	`next_run_at` integer NOT NULL,
	`last_run_id` text,
	`created_by` text,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `schedules_due_idx` ON `schedules` (`next_run_at`);--> statement-breakpoint
CREATE INDEX `schedules_ws_idx` ON `schedules` (`workspace_id`,`created_at`);--> statement-breakpoint
ALTER TABLE `workspaces` ADD `assessments_enabled` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `workspaces` ADD `assessment_interval_minutes` integer DEFAULT 1440 NOT NULL;--> statement-breakpoint
ALTER TABLE `workspaces` ADD `auto_remediate` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `workspaces` ADD `next_assessment_at` integer;--> statement-breakpoint
ALTER TABLE `workspaces` ADD `drift_status` text;--> statement-breakpoint
ALTER TABLE `workspaces` ADD `last_assessment_at` integer;