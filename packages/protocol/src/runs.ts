/** Run statuses as the API reports them; shared with the CLI. Imports nothing. */
export const RUN_STATUSES = [
  "pending",
  "plan_queued",
  "planning",
  "planned",
  "planned_and_finished",
  "confirmed",
  "apply_queued",
  "applying",
  "applied",
  "discarded",
  "errored",
  "canceled",
  "force_canceled",
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
