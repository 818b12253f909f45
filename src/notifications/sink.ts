/**
 * The notifications sink of the run events queue: for each enabled configuration of the event's
 * workspace subscribed to its type, one delivery (its id derived from the event and the
 * configuration, so a redelivered event makes none twice), then a first attempt of each new one,
 * side by side. What fails is retried by the cron's sweep (`deliver.ts`), not by this message.
 */
import type { RunEvent } from "../events/model.ts";
import type { RunEventSink } from "../events/sinks.ts";
import { getRunById } from "../runs/queries.ts";
import { getWorkspaceById } from "../workspaces/queries.ts";
import { attemptDelivery } from "./deliver.ts";
import { payloadFor } from "./payloads.ts";
import { deliveriesByIds, insertDeliveries, subscribedNotifications } from "./queries.ts";
import { deliveryId, notificationFacts } from "./service.ts";

export const notificationSink: RunEventSink = {
  name: "notifications",
  async handle(deps, event: RunEvent) {
    const configs = await subscribedNotifications(deps.db, event.workspaceId, event.type);
    if (configs.length === 0) {
      return;
    }
    const [workspace, run] = await Promise.all([
      getWorkspaceById(deps.db, event.workspaceId),
      getRunById(deps.db, event.runId),
    ]);
    if (!workspace || !run) {
      return;
    }
    const now = deps.now();
    const rows = await Promise.all(
      configs.map(async (config) => {
        const facts = await notificationFacts(deps, config, workspace, {
          trigger: event.type,
          eventId: event.id,
          occurredAt: event.occurredAt,
          // The run as it is now, but the status the event reports.
          run: { ...run, status: event.status },
          details: event.data,
        });
        return {
          id: await deliveryId(event.id, config.id),
          orgId: config.orgId,
          notificationId: config.id,
          eventId: event.id,
          trigger: event.type,
          status: "pending" as const,
          body: payloadFor(config.destinationType, facts),
          createdAt: now,
          nextAttemptAt: now,
        };
      }),
    );
    await insertDeliveries(deps.db, rows);
    // Attempts nothing a previous delivery of this message already attempted.
    const fresh = (
      await deliveriesByIds(
        deps.db,
        rows.map((r) => r.id),
      )
    ).filter((d) => d.status === "pending" && d.attempts === 0);
    await Promise.allSettled(
      fresh.map((delivery) => {
        const config = configs.find((c) => c.id === delivery.notificationId);
        return config ? attemptDelivery(deps, delivery, config) : undefined;
      }),
    );
  },
};
