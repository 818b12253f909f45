ALTER TABLE `runs` ADD `target_addrs` text;--> statement-breakpoint
ALTER TABLE `runs` ADD `replace_addrs` text;--> statement-breakpoint
ALTER TABLE `runs` ADD `refresh` integer DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE `runs` ADD `run_variables` text;