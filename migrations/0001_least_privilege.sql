ALTER TABLE `configuration_versions` ADD `is_fork` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `run_tokens` ADD `lease_id` text;--> statement-breakpoint
ALTER TABLE `run_tokens` ADD `started_at` integer;--> statement-breakpoint
CREATE INDEX `run_tokens_job_idx` ON `run_tokens` (`job_id`);--> statement-breakpoint
ALTER TABLE `runs` ADD `plan_sha256` text;--> statement-breakpoint
ALTER TABLE `state_locks` ADD `job_id` text;--> statement-breakpoint
ALTER TABLE `vcs_deliveries` ADD `body_sha256` text;--> statement-breakpoint
CREATE UNIQUE INDEX `vcs_deliveries_hook_body_idx` ON `vcs_deliveries` (`hook_id`,`body_sha256`);--> statement-breakpoint
ALTER TABLE `workspaces` ADD `remote_state_sharing` text DEFAULT 'none' NOT NULL;--> statement-breakpoint
ALTER TABLE `workspaces` ADD `remote_state_consumer_ids` text;