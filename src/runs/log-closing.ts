/**
 * The last line of a job's log when its agent could not write one: the job ended by the pool
 * (agent lost, token revoked, timed out) or by a cancel (force-cancel, or canceled before an
 * agent started it). An agent that reports its own ending writes its own closing line.
 */
import { FORCE_CANCELED, type JobEndedEvent } from "../../durable/pool-types.ts";

/** The closing line for `event`, or null when the agent ended the job itself. */
export function closingLogLine(event: JobEndedEvent): string | null {
  if (event.action === "job.finished") {
    return null;
  }
  const phase = event.phase;
  if (event.action === "job.canceled") {
    if (event.forced) {
      // An agent that is not live cannot kill anything: the pool's reason says who held it.
      return event.reason === null || event.reason === FORCE_CANCELED
        ? `Outpost: the ${phase} was force-canceled; its agent was told to kill its process and the job ended at once.`
        : `Outpost: the ${phase} was ${event.reason}; the job ended at once.`;
    }
    return event.agentId === null
      ? `Outpost: the ${phase} was canceled before an agent started it.`
      : `Outpost: the ${phase} was canceled${event.reason ? ` (${event.reason})` : ""}.`;
  }
  return `Outpost: the ${phase} ended without its agent's report: ${event.reason ?? "the job errored"}.`;
}
