CREATE TABLE `agent_pools` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`name` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`unknown_after_ms` integer,
	`errored_after_ms` integer,
	`retention_ms` integer,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `agent_pools_org_name_idx` ON `agent_pools` (`org_id`,`name`);--> statement-breakpoint
CREATE TABLE `agent_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`pool_id` text NOT NULL,
	`description` text NOT NULL,
	`token_hash` text NOT NULL,
	`created_by` text,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	`last_used_at` integer,
	`revoked_at` integer,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`pool_id`) REFERENCES `agent_pools`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `agent_tokens_tokenHash_unique` ON `agent_tokens` (`token_hash`);--> statement-breakpoint
CREATE INDEX `agent_tokens_pool_idx` ON `agent_tokens` (`pool_id`);--> statement-breakpoint
CREATE TABLE `audit_events` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`actor` text NOT NULL,
	`action` text NOT NULL,
	`target_type` text NOT NULL,
	`target_id` text NOT NULL,
	`data` text,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL
);
--> statement-breakpoint
CREATE INDEX `audit_events_org_created_idx` ON `audit_events` (`org_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `configuration_versions` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`source` text NOT NULL,
	`r2_key` text,
	`sha256` text,
	`size_bytes` integer,
	`repo_url` text,
	`commit_sha` text,
	`branch` text,
	`is_speculative` integer DEFAULT false NOT NULL,
	`created_by` text,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `configuration_versions_ws_idx` ON `configuration_versions` (`workspace_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `org_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`role` text NOT NULL,
	`description` text NOT NULL,
	`token_hash` text NOT NULL,
	`created_by` text,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	`last_used_at` integer,
	`revoked_at` integer,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `org_tokens_tokenHash_unique` ON `org_tokens` (`token_hash`);--> statement-breakpoint
CREATE INDEX `org_tokens_org_idx` ON `org_tokens` (`org_id`);--> statement-breakpoint
CREATE TABLE `organizations` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `organizations_name_unique` ON `organizations` (`name`);--> statement-breakpoint
CREATE TABLE `run_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`run_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`job_id` text NOT NULL,
	`token_hash` text NOT NULL,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	`revoked_at` integer,
	FOREIGN KEY (`run_id`) REFERENCES `runs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `run_tokens_tokenHash_unique` ON `run_tokens` (`token_hash`);--> statement-breakpoint
CREATE INDEX `run_tokens_run_idx` ON `run_tokens` (`run_id`);--> statement-breakpoint
CREATE TABLE `runs` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`configuration_version_id` text,
	`operation` text NOT NULL,
	`is_speculative` integer DEFAULT false NOT NULL,
	`status` text NOT NULL,
	`message` text DEFAULT '' NOT NULL,
	`status_reason` text,
	`source` text DEFAULT 'api' NOT NULL,
	`commit_sha` text,
	`branch` text,
	`pull_request_number` integer,
	`author` text,
	`commit_message` text,
	`is_fork` integer DEFAULT false NOT NULL,
	`is_auto_apply` integer DEFAULT false NOT NULL,
	`planned_execution_mode` text,
	`planned_pool_id` text,
	`plan_summary` text,
	`status_timestamps` text,
	`cancel_requested_at` integer,
	`created_by` text,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `runs_ws_created_idx` ON `runs` (`workspace_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `runs_org_status_idx` ON `runs` (`org_id`,`status`);--> statement-breakpoint
CREATE INDEX `runs_commit_idx` ON `runs` (`org_id`,`commit_sha`);--> statement-breakpoint
CREATE TABLE `sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`token_id` text NOT NULL,
	`secret_hash` text NOT NULL,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	`expires_at` integer NOT NULL,
	`revoked_at` integer,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`token_id`) REFERENCES `org_tokens`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `sessions_secretHash_unique` ON `sessions` (`secret_hash`);--> statement-breakpoint
CREATE INDEX `sessions_token_idx` ON `sessions` (`token_id`);--> statement-breakpoint
CREATE TABLE `state_locks` (
	`workspace_id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`lock_id` text NOT NULL,
	`info` text NOT NULL,
	`run_id` text,
	`created_by` text,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `state_locks_run_idx` ON `state_locks` (`run_id`);--> statement-breakpoint
CREATE TABLE `state_versions` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`serial` integer NOT NULL,
	`lineage` text NOT NULL,
	`md5` text NOT NULL,
	`size_bytes` integer NOT NULL,
	`terraform_version` text,
	`r2_key` text NOT NULL,
	`is_encrypted` integer DEFAULT false NOT NULL,
	`outputs_status` text DEFAULT 'none' NOT NULL,
	`restored_from_id` text,
	`discarded_at` integer,
	`run_id` text,
	`created_by` text,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `state_versions_ws_serial_idx` ON `state_versions` (`workspace_id`,`serial`) WHERE discarded_at is null;--> statement-breakpoint
CREATE INDEX `state_versions_ws_created_idx` ON `state_versions` (`workspace_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `variables` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`key` text NOT NULL,
	`category` text NOT NULL,
	`is_hcl` integer DEFAULT false NOT NULL,
	`is_sensitive` integer DEFAULT false NOT NULL,
	`value` text,
	`ciphertext` text,
	`key_id` text,
	`description` text DEFAULT '' NOT NULL,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `variables_ws_cat_key_idx` ON `variables` (`workspace_id`,`category`,`key`);--> statement-breakpoint
CREATE TABLE `vcs_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`hook_id` text NOT NULL,
	`delivery_id` text NOT NULL,
	`event` text NOT NULL,
	`outcome` text,
	`received_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	FOREIGN KEY (`hook_id`) REFERENCES `vcs_hooks`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `vcs_deliveries_hook_delivery_idx` ON `vcs_deliveries` (`hook_id`,`delivery_id`);--> statement-breakpoint
CREATE TABLE `vcs_hooks` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`provider` text NOT NULL,
	`repo_url` text,
	`description` text DEFAULT '' NOT NULL,
	`secret_ciphertext` text NOT NULL,
	`previous_secret_ciphertext` text,
	`previous_secret_expires_at` integer,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `vcs_hooks_org_idx` ON `vcs_hooks` (`org_id`);--> statement-breakpoint
CREATE TABLE `workspaces` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`name` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`execution_mode` text DEFAULT 'agent' NOT NULL,
	`pool_id` text,
	`engine` text DEFAULT 'terraform' NOT NULL,
	`engine_version` text NOT NULL,
	`working_directory` text DEFAULT '' NOT NULL,
	`auto_apply` integer DEFAULT false NOT NULL,
	`vcs_repo_url` text,
	`vcs_branch` text,
	`vcs_trigger_paths` text,
	`fork_pull_requests` text DEFAULT 'refuse' NOT NULL,
	`locked_by` text,
	`lock_reason` text,
	`locked_at` integer,
	`current_run_id` text,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`pool_id`) REFERENCES `agent_pools`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `workspaces_org_name_idx` ON `workspaces` (`org_id`,`name`);--> statement-breakpoint
CREATE INDEX `workspaces_pool_idx` ON `workspaces` (`pool_id`);