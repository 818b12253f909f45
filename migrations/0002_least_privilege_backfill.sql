-- Existing workspaces keep serving terraform_remote_state to the rest of their organization (now
-- outputs only), so configurations that read another workspace's outputs keep working after the
-- upgrade; new workspaces share with nobody until an admin opts in.
UPDATE `workspaces` SET `remote_state_sharing` = 'organization';--> statement-breakpoint
-- Tokens of jobs running during the upgrade were minted before leases were recorded: they stay
-- usable until their job ends, as before.
UPDATE `run_tokens` SET `started_at` = `created_at` WHERE `revoked_at` IS NULL;--> statement-breakpoint
-- A pull request's configuration version is a fork's when a run queued on it was.
UPDATE `configuration_versions` SET `is_fork` = true
  WHERE `id` IN (SELECT `configuration_version_id` FROM `runs` WHERE `is_fork` = true);
