CREATE TABLE `job_timings` (
	`org_id` text NOT NULL,
	`pool_id` text NOT NULL,
	`phase` text NOT NULL,
	`metric` text NOT NULL,
	`le` text NOT NULL,
	`count` integer NOT NULL,
	`sum_seconds` real NOT NULL,
	PRIMARY KEY(`pool_id`, `phase`, `metric`, `le`),
	FOREIGN KEY (`pool_id`) REFERENCES `agent_pools`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `job_timings_org_idx` ON `job_timings` (`org_id`);--> statement-breakpoint
CREATE TABLE `run_outcomes` (
	`org_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`outcome` text NOT NULL,
	`count` integer NOT NULL,
	PRIMARY KEY(`workspace_id`, `outcome`),
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `run_outcomes_org_idx` ON `run_outcomes` (`org_id`);--> statement-breakpoint
ALTER TABLE `agent_pools` ADD `min_agents` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `agent_pools` ADD `max_agents` integer DEFAULT 10 NOT NULL;--> statement-breakpoint
ALTER TABLE `agent_pools` ADD `jobs_per_agent` integer DEFAULT 1 NOT NULL;