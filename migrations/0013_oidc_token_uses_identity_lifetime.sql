CREATE TABLE `oidc_token_uses` (
	`issuer` text NOT NULL,
	`token_key` text NOT NULL,
	`pool_id` text NOT NULL,
	`chain_id` text NOT NULL,
	`expires_at` integer NOT NULL,
	PRIMARY KEY(`issuer`, `token_key`)
);
--> statement-breakpoint
CREATE INDEX `oidc_token_uses_expires_idx` ON `oidc_token_uses` (`expires_at`);--> statement-breakpoint
ALTER TABLE `workspaces` ADD `workload_identity_token_lifetime_seconds` integer DEFAULT 900 NOT NULL;