CREATE TABLE `project_team_access` (
	`project_id` text NOT NULL,
	`team_id` text NOT NULL,
	`org_id` text NOT NULL,
	`access` text NOT NULL,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`project_id`, `team_id`),
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`team_id`) REFERENCES `teams`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `project_team_access_team_idx` ON `project_team_access` (`team_id`);--> statement-breakpoint
CREATE TABLE `projects` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`name` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`is_default` integer DEFAULT false NOT NULL,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `projects_org_name_idx` ON `projects` (`org_id`,`name`);--> statement-breakpoint
CREATE UNIQUE INDEX `projects_org_default_idx` ON `projects` (`org_id`) WHERE is_default = 1;--> statement-breakpoint
CREATE TABLE `variable_set_projects` (
	`varset_id` text NOT NULL,
	`project_id` text NOT NULL,
	`org_id` text NOT NULL,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	PRIMARY KEY(`varset_id`, `project_id`),
	FOREIGN KEY (`varset_id`) REFERENCES `variable_sets`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `variable_set_projects_project_idx` ON `variable_set_projects` (`project_id`);--> statement-breakpoint
CREATE TABLE `variable_set_variables` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`varset_id` text NOT NULL,
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
	FOREIGN KEY (`varset_id`) REFERENCES `variable_sets`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `variable_set_variables_set_cat_key_idx` ON `variable_set_variables` (`varset_id`,`category`,`key`);--> statement-breakpoint
CREATE TABLE `variable_set_workspaces` (
	`varset_id` text NOT NULL,
	`workspace_id` text NOT NULL,
	`org_id` text NOT NULL,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	PRIMARY KEY(`varset_id`, `workspace_id`),
	FOREIGN KEY (`varset_id`) REFERENCES `variable_sets`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`workspace_id`) REFERENCES `workspaces`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `variable_set_workspaces_workspace_idx` ON `variable_set_workspaces` (`workspace_id`);--> statement-breakpoint
CREATE TABLE `variable_sets` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`name` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`global` integer DEFAULT false NOT NULL,
	`priority` integer DEFAULT false NOT NULL,
	`created_at` integer DEFAULT (cast(unixepoch('subsec') * 1000 as integer)) NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `variable_sets_org_name_idx` ON `variable_sets` (`org_id`,`name`);--> statement-breakpoint
ALTER TABLE `agent_pools` ADD `organization_scoped` integer DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE `agent_pools` ADD `allowed_workspace_ids` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
ALTER TABLE `agent_pools` ADD `allowed_project_ids` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
ALTER TABLE `workspaces` ADD `project_id` text REFERENCES projects(id);--> statement-breakpoint
CREATE INDEX `workspaces_project_idx` ON `workspaces` (`project_id`);