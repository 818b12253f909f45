/**
 * Run events, pure: the event types (Terraform Cloud's notification trigger names), which run
 * status is which lifecycle event, the id an event has, and the message the `RUN_EVENTS` queue
 * carries. D1 records every status change of a run in the outbox (`run_events`, `outbox.ts`);
 * the dispatcher turns those that are lifecycle events into queue messages, and the sinks
 * (`sinks.ts`) consume them. docs/notifications.md says the same in words.
 */
import { RUN_STATUSES, type RunStatus } from "@outpost/protocol";
import { z } from "zod";

/** The run lifecycle events, named as Terraform Cloud's notification triggers. */
export const RUN_EVENT_TYPES = [
  "run:created",
  "run:planning",
  "run:needs_attention",
  "run:applying",
  "run:completed",
  "run:errored",
] as const;
export type RunEventType = (typeof RUN_EVENT_TYPES)[number];

/** Health assessment results (drift detection), emitted by assessments into the same queue. */
export const ASSESSMENT_EVENT_TYPES = ["assessment:drifted", "assessment:failed"] as const;

/** Every event type the `RUN_EVENTS` queue carries. */
export const EVENT_TYPES = [...RUN_EVENT_TYPES, ...ASSESSMENT_EVENT_TYPES] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** What a notification configuration may subscribe to: every event type. */
export const NOTIFICATION_TRIGGERS = EVENT_TYPES;
export type NotificationTrigger = EventType;

/** Where a notification configuration sends: signed JSON, a Slack or a Microsoft Teams message. */
export const DESTINATION_TYPES = ["generic", "slack", "microsoft-teams"] as const;
export type DestinationType = (typeof DESTINATION_TYPES)[number];

/**
 * The lifecycle event of entering each status, with Terraform Cloud's semantics: `completed` is
 * a run that finished successfully (applied, or planned with nothing to apply); `errored` is one
 * that "terminated early due to error or cancellation" (errored, canceled, force-canceled,
 * discarded). The event carries the status, so a receiver can tell them apart. `planned` needs
 * attention only when nobody confirms it automatically ({@link isLifecycleEntry}). Statuses not
 * listed (queued, confirmed) are steps inside a phase, not events.
 */
export const LIFECYCLE_EVENTS: Readonly<Partial<Record<RunStatus, RunEventType>>> = {
  pending: "run:created",
  planning: "run:planning",
  planned: "run:needs_attention",
  applying: "run:applying",
  applied: "run:completed",
  planned_and_finished: "run:completed",
  errored: "run:errored",
  canceled: "run:errored",
  force_canceled: "run:errored",
  discarded: "run:errored",
};

/**
 * Whether entering `status` is a lifecycle event of this run: a status of
 * {@link LIFECYCLE_EVENTS}, except `planned` on an auto-apply run (confirmed at once, it never
 * waits for anyone).
 */
export function isLifecycleEntry(status: RunStatus, run: { isAutoApply: boolean }): boolean {
  if (status === "planned" && run.isAutoApply) {
    return false;
  }
  return LIFECYCLE_EVENTS[status] !== undefined;
}

/**
 * The id of the event of a run entering `status`. A run enters each status at most once (the
 * state machine has no cycles), so the id names the event: recorded or delivered twice, it is
 * recognisably the same one.
 */
export function runEventId(runId: string, status: RunStatus): string {
  return `${runId}:${status}`;
}

/** A message of the `RUN_EVENTS` queue: one event, as every sink receives it. */
export const RunEvent = z.object({
  id: z.string().min(1).max(200),
  type: z.enum(EVENT_TYPES),
  orgId: z.string(),
  workspaceId: z.string(),
  runId: z.string(),
  status: z.enum(RUN_STATUSES),
  /** When it happened (ms since the epoch). */
  occurredAt: z.number().int(),
  data: z.record(z.string(), z.unknown()).nullable(),
});
export type RunEvent = z.infer<typeof RunEvent>;

/**
 * The event an outbox row stands for, or null when the change it records is no lifecycle event
 * (a step inside a phase, or `planned` on an auto-apply run). A row with a type (a run's
 * creation, an emitted assessment result) is that event.
 */
export function eventOfOutboxRow(
  row: {
    id: string;
    type: EventType | null;
    orgId: string;
    workspaceId: string;
    runId: string;
    status: RunStatus;
    occurredAt: number;
    data: Record<string, unknown> | null;
  },
  run: { isAutoApply: boolean },
): RunEvent | null {
  const type =
    row.type ?? (isLifecycleEntry(row.status, run) ? LIFECYCLE_EVENTS[row.status] : null);
  if (!type) {
    return null;
  }
  return {
    id: row.id,
    type,
    orgId: row.orgId,
    workspaceId: row.workspaceId,
    runId: row.runId,
    status: row.status,
    occurredAt: row.occurredAt,
    data: row.data,
  };
}

/**
 * What a sink throws when trying again later may succeed: `delaySeconds` is how long the far
 * side asked to wait (`Retry-After`), which the retry honours within bounds.
 */
export class RetryLater extends Error {
  readonly delaySeconds: number;
  constructor(message: string, delaySeconds = 0) {
    super(message);
    this.delaySeconds = delaySeconds;
  }
}

/** The longest wait a sink may ask for (a VCS's rate-limit reset, say) before the next try. */
export const MAX_ASKED_RETRY_DELAY_SECONDS = 900;

/**
 * Seconds before a message whose sinks failed is delivered again: 2, 4, 8 … at most 5 minutes,
 * or longer when a sink was asked to wait (`Retry-After`), up to 15 minutes.
 */
export function sinkRetryDelaySeconds(attempts: number, askedSeconds = 0): number {
  const backoff = Math.min(300, 2 ** Math.min(Math.max(attempts, 1), 9));
  return Math.max(backoff, Math.min(MAX_ASKED_RETRY_DELAY_SECONDS, Math.ceil(askedSeconds)));
}
