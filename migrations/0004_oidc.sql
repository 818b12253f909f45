CREATE TABLE `oidc_trusts` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`pool_id` text NOT NULL,
	`issuer` text NOT NULL,
	`audience` text NOT NULL,
	`claims` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`created_by` text,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`pool_id`) REFERENCES `agent_pools`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `oidc_trusts_pool_idx` ON `oidc_trusts` (`pool_id`);--> statement-breakpoint
ALTER TABLE `agent_pools` ADD `max_token_expiration_ms` integer;--> statement-breakpoint
ALTER TABLE `agent_tokens` ADD `expires_at` integer;--> statement-breakpoint
ALTER TABLE `agent_tokens` ADD `oidc_trust_id` text;--> statement-breakpoint
ALTER TABLE `agent_tokens` ADD `oidc_issuer` text;--> statement-breakpoint
ALTER TABLE `agent_tokens` ADD `oidc_subject` text;--> statement-breakpoint
ALTER TABLE `agent_tokens` ADD `chain_id` text;--> statement-breakpoint
CREATE INDEX `agent_tokens_chain_idx` ON `agent_tokens` (`chain_id`);--> statement-breakpoint
ALTER TABLE `workspaces` ADD `workload_identity` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `workspaces` ADD `workload_identity_audience` text;