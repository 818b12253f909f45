-- Runs and state versions named who made them by a bare id; they now keep an actor
-- ({"type","id","name"}, src/authz/actor.ts). Existing ids become actors of their kind, named by
-- an org token's description where there is one.
UPDATE `runs` SET `created_by` = json_object(
    'type', CASE
      WHEN `created_by` LIKE 'tok\_%' ESCAPE '\' THEN 'org-token'
      WHEN `created_by` LIKE 'hook\_%' ESCAPE '\' THEN 'vcs'
      ELSE 'system' END,
    'id', `created_by`,
    'name', coalesce((SELECT `description` FROM `org_tokens` WHERE `org_tokens`.`id` = `runs`.`created_by`), `created_by`))
  WHERE `created_by` IS NOT NULL AND NOT json_valid(`created_by`);--> statement-breakpoint
UPDATE `state_versions` SET `created_by` = json_object(
    'type', CASE
      WHEN `created_by` LIKE 'tok\_%' ESCAPE '\' THEN 'org-token'
      WHEN `created_by` LIKE 'run\_%' ESCAPE '\' THEN 'run'
      ELSE 'system' END,
    'id', `created_by`,
    'name', coalesce((SELECT `description` FROM `org_tokens` WHERE `org_tokens`.`id` = `state_versions`.`created_by`), `created_by`))
  WHERE `created_by` IS NOT NULL AND NOT json_valid(`created_by`);--> statement-breakpoint
UPDATE `audit_events` SET `actor_type` = CASE
    WHEN `actor` LIKE 'tok\_%' ESCAPE '\' THEN 'org-token'
    WHEN `actor` LIKE 'atok\_%' ESCAPE '\' OR `actor` LIKE 'agt\_%' ESCAPE '\' THEN 'agent'
    WHEN `actor` LIKE 'run\_%' ESCAPE '\' THEN 'run'
    WHEN `actor` LIKE 'hook\_%' ESCAPE '\' THEN 'vcs'
    ELSE 'system' END,
  `actor_name` = coalesce((SELECT `description` FROM `org_tokens` WHERE `org_tokens`.`id` = `audit_events`.`actor`), `actor`)
  WHERE `actor_type` IS NULL;
