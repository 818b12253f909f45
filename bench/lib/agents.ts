/**
 * Fleets of protocol agents for the bench: many agents long-polling one pool, each running the
 * real loop (poll, start, finish, poll again), with hooks to time when a job is held.
 */
import type { JobAssignment } from "@outpost/protocol";
import { ProtocolAgent } from "./client.ts";
import { now, pool } from "./stats.ts";

export type Fleet = {
  agents: ProtocolAgent[];
  /** Requests the fleet sent, by kind. */
  sent: Record<string, number>;
  /** Poll start times per agent, to measure the idle poll cycle. */
  pollStarts: number[][];
  /** Polls sent and not yet answered. */
  polling(): number;
  /** Stops the loops: held polls are aborted, then every agent says goodbye. */
  stop(): Promise<void>;
};

export type FleetOptions = {
  url: string;
  token: string;
  size: number;
  waitSeconds: number;
  /** Called the moment a job is held, before `start`. */
  onJob?: (job: JobAssignment, at: number) => void;
  /** What the agent does with a held job; default: start and finish (no changes). */
  work?: (agent: ProtocolAgent, job: JobAssignment) => Promise<void>;
};

/** Registers `size` agents (50 at a time) and starts their poll loops. */
export async function startFleet(options: FleetOptions): Promise<Fleet> {
  const agents = await pool(
    Array.from({ length: options.size }, (_, i) => i),
    50,
    async (i) => {
      const agent = new ProtocolAgent(options.url, options.token);
      await agent.register(`bench-${i}`);
      return agent;
    },
  );
  const sent: Record<string, number> = {};
  const bump = (kind: string) => {
    sent[kind] = (sent[kind] ?? 0) + 1;
  };
  const pollStarts = agents.map(() => [] as number[]);
  const abort = new AbortController();
  let polling = 0;
  const work =
    options.work ??
    (async (agent: ProtocolAgent, job: JobAssignment) => {
      bump("start");
      await agent.start(job);
      bump("finish");
      await agent.finish(job);
    });
  const loops = agents.map(async (agent, i) => {
    while (!abort.signal.aborted) {
      let job: JobAssignment | "exit" | null;
      try {
        pollStarts[i]?.push(now());
        bump("next");
        polling++;
        // A poll is held at most 50 s; one unanswered after 15 s more is cut and counted.
        const bounded = AbortSignal.any([
          abort.signal,
          AbortSignal.timeout((options.waitSeconds + 15) * 1000),
        ]);
        job = await agent.next(options.waitSeconds, bounded).finally(() => {
          polling--;
        });
      } catch (error) {
        if (abort.signal.aborted) {
          return;
        }
        // As the real agent does: a failed poll is transient, counted, and polled again.
        bump(`nextFailed:${error instanceof Error ? error.name : "unknown"}`);
        await new Promise((done) => setTimeout(done, 200));
        continue;
      }
      if (job === "exit") {
        return;
      }
      if (job) {
        options.onJob?.(job, now());
        await work(agent, job);
      }
    }
  });
  const settled = Promise.allSettled(loops);
  return {
    agents,
    sent,
    pollStarts,
    polling: () => polling,
    async stop() {
      abort.abort();
      const results = await settled;
      await pool(agents, 50, (agent) => agent.goodbye());
      const failed = results.find((r) => r.status === "rejected");
      if (failed && failed.status === "rejected") {
        throw failed.reason;
      }
    },
  };
}
