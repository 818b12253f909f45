CREATE TABLE `vcs_feedback` (
	`run_id` text NOT NULL,
	`kind` text NOT NULL,
	`org_id` text NOT NULL,
	`run_status` text NOT NULL,
	`state` text NOT NULL,
	`description` text NOT NULL,
	`posted` integer NOT NULL,
	`error` text,
	`attempts` integer DEFAULT 1 NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`run_id`, `kind`),
	FOREIGN KEY (`run_id`) REFERENCES `runs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `vcs_hooks` ADD `feedback` text DEFAULT 'off' NOT NULL;--> statement-breakpoint
ALTER TABLE `vcs_hooks` ADD `api_url` text;--> statement-breakpoint
ALTER TABLE `vcs_hooks` ADD `token_ciphertext` text;