/**
 * The consumers of the `RUN_EVENTS` queue. Each sink gets every event at least once and must be
 * idempotent by `event.id` (a redelivered message runs every sink again); a sink that throws has
 * the message retried with backoff. A sink never changes a run's status on its own terms: it
 * reacts to what the run model recorded. Adding a consumer (VCS commit statuses, say) is one more
 * entry in {@link RUN_EVENT_SINKS}.
 */
import type { Deps } from "../deps.ts";
import { notificationSink } from "../notifications/sink.ts";
import { runTriggerSink } from "../run-triggers/sink.ts";
import { vcsFeedbackSink } from "../vcs-feedback/sink.ts";
import type { RunEvent } from "./model.ts";

export type RunEventSink = {
  /** Names the sink in logs. */
  name: string;
  /** Handles one event; resolves once what it must do is durable (or done). */
  handle(deps: Deps, event: RunEvent): Promise<void>;
};

export const RUN_EVENT_SINKS: readonly RunEventSink[] = [
  notificationSink,
  runTriggerSink,
  vcsFeedbackSink,
];
