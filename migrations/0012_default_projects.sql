-- Every workspace belongs to a project: each organization gets its default project, named
-- "Default Project", and every existing workspace goes into it. An id is prj_ and 26 characters
-- of the base32 alphabet (random hex with the digits base32 lacks mapped to letters it has).
INSERT INTO `projects` (`id`, `org_id`, `name`, `description`, `is_default`, `updated_at`)
  SELECT 'prj_' || replace(replace(replace(replace(lower(hex(randomblob(13))), '0', 'w'), '1', 'x'), '8', 'y'), '9', 'z'),
    `id`, 'Default Project', 'Where workspaces go when no project is named', true,
    cast(unixepoch('subsec') * 1000 as integer)
  FROM `organizations`
  WHERE NOT EXISTS (SELECT 1 FROM `projects` WHERE `projects`.`org_id` = `organizations`.`id` AND `projects`.`is_default` = true);--> statement-breakpoint
UPDATE `workspaces` SET `project_id` = (
    SELECT `id` FROM `projects` WHERE `projects`.`org_id` = `workspaces`.`org_id` AND `projects`.`is_default` = true)
  WHERE `project_id` IS NULL;
