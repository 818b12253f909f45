-- The counters behind GET /metrics (src/metrics/): runs that ended by workspace and outcome
-- (run_outcomes), and how long jobs waited and ran by pool and phase, as histogram buckets
-- (job_timings). Triggers keep them, so every code path that ends a run or starts and ends a job
-- is counted exactly once, and a scrape reads rows bounded by workspaces and pools, never by runs.
-- The bucket bounds are those of src/metrics/model.ts (a test checks that both agree).
--
-- A run enters a terminal status once and never leaves it (src/runs/model.ts).
CREATE TRIGGER `runs_count_outcome` AFTER UPDATE OF `status` ON `runs`
WHEN NEW.`status` IN ('planned_and_finished', 'applied', 'discarded', 'errored', 'canceled', 'force_canceled')
  AND OLD.`status` NOT IN ('planned_and_finished', 'applied', 'discarded', 'errored', 'canceled', 'force_canceled')
BEGIN
  INSERT INTO `run_outcomes` (`org_id`, `workspace_id`, `outcome`, `count`)
  VALUES (NEW.`org_id`, NEW.`workspace_id`, NEW.`status`, 1)
  ON CONFLICT (`workspace_id`, `outcome`) DO UPDATE SET `count` = `count` + 1;
END;--> statement-breakpoint
-- Wait: from the run entering <phase>_queued to the agent's start of the job. A job's start is
-- recorded once (a run_jobs row is inserted once); a pool deleted meanwhile records nothing.
CREATE TRIGGER `run_jobs_observe_wait` AFTER INSERT ON `run_jobs`
BEGIN
  INSERT INTO `job_timings` (`org_id`, `pool_id`, `phase`, `metric`, `le`, `count`, `sum_seconds`)
  SELECT NEW.`org_id`, NEW.`pool_id`, NEW.`phase`, 'wait',
    CASE
      WHEN `seconds` <= 0.1 THEN '0.1'
      WHEN `seconds` <= 0.25 THEN '0.25'
      WHEN `seconds` <= 0.5 THEN '0.5'
      WHEN `seconds` <= 1 THEN '1'
      WHEN `seconds` <= 2.5 THEN '2.5'
      WHEN `seconds` <= 5 THEN '5'
      WHEN `seconds` <= 10 THEN '10'
      WHEN `seconds` <= 30 THEN '30'
      WHEN `seconds` <= 60 THEN '60'
      WHEN `seconds` <= 120 THEN '120'
      WHEN `seconds` <= 300 THEN '300'
      WHEN `seconds` <= 600 THEN '600'
      WHEN `seconds` <= 1800 THEN '1800'
      WHEN `seconds` <= 3600 THEN '3600'
      ELSE '+Inf'
    END,
    1, `seconds`
  FROM (
    SELECT MAX(0, NEW.`started_at` - json_extract(`status_timestamps`, '$.' || NEW.`phase` || '_queued')) / 1000.0 AS `seconds`
    FROM `runs` WHERE `id` = NEW.`run_id`
  )
  WHERE `seconds` IS NOT NULL
    AND EXISTS (SELECT 1 FROM `agent_pools` WHERE `id` = NEW.`pool_id`)
  ON CONFLICT (`pool_id`, `phase`, `metric`, `le`) DO UPDATE
    SET `count` = `count` + 1, `sum_seconds` = `sum_seconds` + excluded.`sum_seconds`;
END;--> statement-breakpoint
-- Duration: from the job's start to its end; a job's end is recorded once (first ending wins).
CREATE TRIGGER `run_jobs_observe_duration` AFTER UPDATE OF `ended_at` ON `run_jobs`
WHEN OLD.`ended_at` IS NULL AND NEW.`ended_at` IS NOT NULL
BEGIN
  INSERT INTO `job_timings` (`org_id`, `pool_id`, `phase`, `metric`, `le`, `count`, `sum_seconds`)
  SELECT NEW.`org_id`, NEW.`pool_id`, NEW.`phase`, 'duration',
    CASE
      WHEN `seconds` <= 1 THEN '1'
      WHEN `seconds` <= 5 THEN '5'
      WHEN `seconds` <= 10 THEN '10'
      WHEN `seconds` <= 30 THEN '30'
      WHEN `seconds` <= 60 THEN '60'
      WHEN `seconds` <= 120 THEN '120'
      WHEN `seconds` <= 300 THEN '300'
      WHEN `seconds` <= 600 THEN '600'
      WHEN `seconds` <= 1200 THEN '1200'
      WHEN `seconds` <= 1800 THEN '1800'
      WHEN `seconds` <= 3600 THEN '3600'
      WHEN `seconds` <= 7200 THEN '7200'
      WHEN `seconds` <= 14400 THEN '14400'
      WHEN `seconds` <= 43200 THEN '43200'
      WHEN `seconds` <= 86400 THEN '86400'
      ELSE '+Inf'
    END,
    1, `seconds`
  FROM (SELECT MAX(0, NEW.`ended_at` - NEW.`started_at`) / 1000.0 AS `seconds`)
  WHERE EXISTS (SELECT 1 FROM `agent_pools` WHERE `id` = NEW.`pool_id`)
  ON CONFLICT (`pool_id`, `phase`, `metric`, `le`) DO UPDATE
    SET `count` = `count` + 1, `sum_seconds` = `sum_seconds` + excluded.`sum_seconds`;
END;--> statement-breakpoint
-- What happened before this migration: every run already ended, every job already recorded.
INSERT INTO `run_outcomes` (`org_id`, `workspace_id`, `outcome`, `count`)
SELECT `org_id`, `workspace_id`, `status`, COUNT(*) FROM `runs`
WHERE `status` IN ('planned_and_finished', 'applied', 'discarded', 'errored', 'canceled', 'force_canceled')
GROUP BY `workspace_id`, `status`;--> statement-breakpoint
INSERT INTO `job_timings` (`org_id`, `pool_id`, `phase`, `metric`, `le`, `count`, `sum_seconds`)
SELECT `org_id`, `pool_id`, `phase`, 'wait', `le`, COUNT(*), SUM(`seconds`) FROM (
  SELECT `org_id`, `pool_id`, `phase`, `seconds`,
    CASE
      WHEN `seconds` <= 0.1 THEN '0.1'
      WHEN `seconds` <= 0.25 THEN '0.25'
      WHEN `seconds` <= 0.5 THEN '0.5'
      WHEN `seconds` <= 1 THEN '1'
      WHEN `seconds` <= 2.5 THEN '2.5'
      WHEN `seconds` <= 5 THEN '5'
      WHEN `seconds` <= 10 THEN '10'
      WHEN `seconds` <= 30 THEN '30'
      WHEN `seconds` <= 60 THEN '60'
      WHEN `seconds` <= 120 THEN '120'
      WHEN `seconds` <= 300 THEN '300'
      WHEN `seconds` <= 600 THEN '600'
      WHEN `seconds` <= 1800 THEN '1800'
      WHEN `seconds` <= 3600 THEN '3600'
      ELSE '+Inf'
    END AS `le`
  FROM (
    SELECT j.`org_id`, j.`pool_id`, j.`phase`, MAX(0, j.`started_at` - json_extract(r.`status_timestamps`, '$.' || j.`phase` || '_queued')) / 1000.0 AS `seconds`
    FROM `run_jobs` j JOIN `runs` r ON r.`id` = j.`run_id`
    WHERE j.`pool_id` IN (SELECT `id` FROM `agent_pools`)
  )
  WHERE `seconds` IS NOT NULL
)
GROUP BY `pool_id`, `phase`, `le`;--> statement-breakpoint
INSERT INTO `job_timings` (`org_id`, `pool_id`, `phase`, `metric`, `le`, `count`, `sum_seconds`)
SELECT `org_id`, `pool_id`, `phase`, 'duration', `le`, COUNT(*), SUM(`seconds`) FROM (
  SELECT `org_id`, `pool_id`, `phase`, `seconds`,
    CASE
      WHEN `seconds` <= 1 THEN '1'
      WHEN `seconds` <= 5 THEN '5'
      WHEN `seconds` <= 10 THEN '10'
      WHEN `seconds` <= 30 THEN '30'
      WHEN `seconds` <= 60 THEN '60'
      WHEN `seconds` <= 120 THEN '120'
      WHEN `seconds` <= 300 THEN '300'
      WHEN `seconds` <= 600 THEN '600'
      WHEN `seconds` <= 1200 THEN '1200'
      WHEN `seconds` <= 1800 THEN '1800'
      WHEN `seconds` <= 3600 THEN '3600'
      WHEN `seconds` <= 7200 THEN '7200'
      WHEN `seconds` <= 14400 THEN '14400'
      WHEN `seconds` <= 43200 THEN '43200'
      WHEN `seconds` <= 86400 THEN '86400'
      ELSE '+Inf'
    END AS `le`
  FROM (
    SELECT j.`org_id`, j.`pool_id`, j.`phase`, MAX(0, j.`ended_at` - j.`started_at`) / 1000.0 AS `seconds`
    FROM `run_jobs` j JOIN `runs` r ON r.`id` = j.`run_id`
    WHERE j.`pool_id` IN (SELECT `id` FROM `agent_pools`)
  )
  WHERE `seconds` IS NOT NULL
)
GROUP BY `pool_id`, `phase`, `le`;
