CREATE TABLE `run_jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`run_id` text NOT NULL,
	`phase` text NOT NULL,
	`pool_id` text NOT NULL,
	`agent_id` text NOT NULL,
	`agent_name` text,
	`agent_version` text NOT NULL,
	`isolation` text,
	`engine_version` text,
	`started_at` integer NOT NULL,
	`ended_at` integer,
	FOREIGN KEY (`run_id`) REFERENCES `runs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `run_jobs_run_idx` ON `run_jobs` (`run_id`);--> statement-breakpoint
CREATE INDEX `audit_events_org_target_idx` ON `audit_events` (`org_id`,`target_type`,`target_id`,`created_at`);