CREATE TABLE `vcs_feedback_items` (
	`id` text PRIMARY KEY NOT NULL,
	`run_id` text NOT NULL,
	`kind` text NOT NULL,
	`org_id` text NOT NULL,
	`pool_id` text NOT NULL,
	`host` text NOT NULL,
	`payload` text NOT NULL,
	`run_status` text NOT NULL,
	`state` text NOT NULL,
	`description` text NOT NULL,
	`preferred_agent_id` text,
	`preferred_until` integer,
	`claimed_id` text,
	`claimed_by` text,
	`claimed_until` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`run_id`) REFERENCES `runs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `vcs_feedback_items_run_kind` ON `vcs_feedback_items` (`run_id`,`kind`);--> statement-breakpoint
CREATE INDEX `vcs_feedback_items_pool_host` ON `vcs_feedback_items` (`pool_id`,`host`);