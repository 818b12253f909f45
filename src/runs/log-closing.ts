/**
 * The last line of a job's log when its agent could not write one: the job ended by the pool
 * (agent lost, token revoked, timed out) or by a cancel (force-cancel, or canceled before an
 * agent started it). An agent that reports its own ending writes its own closing line.
 */
import type { JobEndedEvent } from "../../durable/pool-types.ts";

/** The closing line for `event`, or null when the agent ended the job itself. */
export function closingLogLine(event: JobEndedEvent): string | null {
  if (event.action === "job.finished") {
    return null;
  }
  const phase = event.phase;
  if (event.action === "job.canceled") {
    if (event.forced) {
      return `Outpost: the ${phase} was force-canceled; its process was killed and the job ended at once.`;
    }
    return event.agentId === null
      ? `Outpost: the ${phase} was canceled before an agent started it.`
      : `Outpost: the ${phase} was canceled${event.reason ? ` (${event.reason})` : ""}.`;
  }
  return `Outpost: the ${phase} ended without its agent's report: ${event.reason ?? "the job errored"}.`;
}
