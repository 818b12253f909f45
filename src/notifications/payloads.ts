/**
 * What each destination type receives, pure. Generic destinations get a Standard Webhooks
 * payload (`type`, `timestamp`, `data`); Slack and Microsoft Teams get a message their incoming
 * webhooks render. Payloads name the run, its workspace, status, plan summary counts, who queued
 * it and a link: never a variable, a token, a log line or state.
 */
import type { PlanSummary } from "@outpost/protocol";
import type { Actor } from "../authz/actor.ts";
import type { DestinationType, EventType } from "../events/model.ts";
import type { RunStatus } from "../runs/model.ts";

/** The facts a notification reports, gathered by the sink. */
export type NotificationFacts = {
  trigger: EventType | "verification";
  eventId: string | null;
  occurredAt: number;
  notification: { id: string; name: string };
  organization: { id: string; name: string };
  workspace: { id: string; name: string };
  run: {
    id: string;
    status: RunStatus;
    operation: string;
    isSpeculative: boolean;
    message: string;
    source: string;
    planSummary: PlanSummary | null;
    createdBy: Actor | null;
    url: string | null;
  } | null;
  /** What an emitted event added (an assessment's result). */
  details: Record<string, unknown> | null;
};

const HEADLINES: Record<NotificationFacts["trigger"], string> = {
  "run:created": "Run created",
  "run:planning": "Run planning",
  "run:needs_attention": "Run needs confirmation",
  "run:applying": "Run applying",
  "run:completed": "Run completed",
  "run:errored": "Run errored",
  "assessment:drifted": "Drift detected",
  "assessment:failed": "Drift check failed",
  verification: "Verification",
};

/** One line of the plan summary, or null before there is one. */
export function planLine(summary: PlanSummary | null): string | null {
  if (!summary) {
    return null;
  }
  return `+${summary.adds} ~${summary.changes} -${summary.destroys}${summary.hasChanges ? "" : " (no changes)"}`;
}

function headline(facts: NotificationFacts): string {
  const run = facts.run;
  const title = HEADLINES[facts.trigger];
  return run
    ? `${title}: ${run.id} in ${facts.workspace.name} is ${run.status}`
    : `${title}: notification ${facts.notification.name} of ${facts.workspace.name}`;
}

/** The generic payload: Standard Webhooks' `{ type, timestamp, data }`. */
export function genericPayload(facts: NotificationFacts): string {
  return JSON.stringify({
    type: facts.trigger,
    timestamp: new Date(facts.occurredAt).toISOString(),
    data: {
      eventId: facts.eventId,
      message: headline(facts),
      notification: facts.notification,
      organization: facts.organization,
      workspace: facts.workspace,
      run: facts.run,
      details: facts.details,
    },
  });
}

function detailLines(facts: NotificationFacts): string[] {
  const run = facts.run;
  if (!run) {
    return ["This is a test delivery from Outpost."];
  }
  const plan = planLine(run.planSummary);
  return [
    `Workspace: ${facts.workspace.name}`,
    `Status: ${run.status} (${run.operation}${run.isSpeculative ? ", speculative" : ""})`,
    ...(plan ? [`Plan: ${plan}`] : []),
    ...(run.createdBy ? [`By: ${run.createdBy.name}`] : []),
    ...(run.message ? [`Message: ${run.message}`] : []),
    ...driftLines(facts.details),
  ];
}

/** How many drifted addresses a chat message names before it says how many more there are. */
const CHAT_DRIFTED_LIMIT = 10;

/** An assessment's drifted addresses, for chat messages (generic payloads carry them all). */
function driftLines(details: Record<string, unknown> | null): string[] {
  const drifted = details?.driftedResources;
  if (!Array.isArray(drifted) || drifted.length === 0) {
    return [];
  }
  const shown = drifted.slice(0, CHAT_DRIFTED_LIMIT).map(String).join(", ");
  const more = drifted.length - CHAT_DRIFTED_LIMIT;
  return [`Drifted: ${shown}${more > 0 ? ` and ${more} more` : ""}`];
}

/** Slack's incoming webhook message (`text` with mrkdwn). */
export function slackPayload(facts: NotificationFacts): string {
  const url = facts.run?.url;
  const title = url ? `<${url}|${headline(facts)}>` : headline(facts);
  return JSON.stringify({ text: [`*${title}*`, ...detailLines(facts)].join("\n") });
}

/** A Microsoft Teams message: an Adaptive Card, as Teams' incoming webhooks and workflows take. */
export function teamsPayload(facts: NotificationFacts): string {
  const url = facts.run?.url;
  return JSON.stringify({
    type: "message",
    attachments: [
      {
        contentType: "application/vnd.microsoft.card.adaptive",
        content: {
          $schema: "http://adaptivecards.io/schemas/adaptive-card.json",
          type: "AdaptiveCard",
          version: "1.4",
          body: [
            { type: "TextBlock", text: headline(facts), weight: "Bolder", wrap: true },
            ...detailLines(facts).map((text) => ({ type: "TextBlock", text, wrap: true })),
          ],
          actions: url ? [{ type: "Action.OpenUrl", title: "Open run", url }] : [],
        },
      },
    ],
  });
}

/** The body a destination of `type` receives. */
export function payloadFor(type: DestinationType, facts: NotificationFacts): string {
  switch (type) {
    case "slack":
      return slackPayload(facts);
    case "microsoft-teams":
      return teamsPayload(facts);
    default:
      return genericPayload(facts);
  }
}
