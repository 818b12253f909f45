ALTER TABLE `workspaces` ADD `stack_name` text;--> statement-breakpoint
ALTER TABLE `workspaces` ADD `has_own_state_backend` integer DEFAULT false NOT NULL;