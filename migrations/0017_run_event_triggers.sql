-- The run events outbox (docs/notifications.md): every run's creation and every status change is
-- recorded in the same statement that makes it, so an event can be neither missed nor recorded
-- for a change that did not happen. Which change is which lifecycle event is the run model's
-- rule (src/events/model.ts), applied when the events are sent.
CREATE TRIGGER `run_events_on_insert` AFTER INSERT ON `runs` BEGIN
  INSERT OR IGNORE INTO `run_events` (`id`, `type`, `org_id`, `workspace_id`, `run_id`, `status`, `occurred_at`)
  VALUES (NEW.`id` || ':created', 'run:created', NEW.`org_id`, NEW.`workspace_id`, NEW.`id`, NEW.`status`, NEW.`updated_at`);
END;--> statement-breakpoint
CREATE TRIGGER `run_events_on_status` AFTER UPDATE OF `status` ON `runs` WHEN NEW.`status` IS NOT OLD.`status` BEGIN
  INSERT OR IGNORE INTO `run_events` (`id`, `type`, `org_id`, `workspace_id`, `run_id`, `status`, `occurred_at`)
  VALUES (NEW.`id` || ':' || NEW.`status`, NULL, NEW.`org_id`, NEW.`workspace_id`, NEW.`id`, NEW.`status`, NEW.`updated_at`);
END;
