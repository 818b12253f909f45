CREATE TABLE `vcs_app_tokens` (
	`hook_id` text NOT NULL,
	`repo_path` text NOT NULL,
	`installation_id` integer NOT NULL,
	`token_ciphertext` text NOT NULL,
	`expires_at` integer NOT NULL,
	PRIMARY KEY(`hook_id`, `repo_path`),
	FOREIGN KEY (`hook_id`) REFERENCES `vcs_hooks`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `vcs_hooks` ADD `app_id` integer;--> statement-breakpoint
ALTER TABLE `vcs_hooks` ADD `app_key_ciphertext` text;