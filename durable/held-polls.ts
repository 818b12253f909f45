/**
 * The pool's held long-polls: in memory only (a lost one is a poll that ended early), answered
 * oldest first. The only `setTimeout` in the object ends such a wait; no correctness depends on
 * it. Matching polls with work is one pass that does not walk every held poll (docs/queue.md,
 * "Long-poll").
 */
import * as ops from "./pool-ops.ts";
import type { PollOutcome } from "./pool-types.ts";

type Waiter = {
  agentId: string;
  /** The agent's phases as registered (they never change), to skip what the queue lacks. */
  accepts: string;
  resolve: (outcome: PollOutcome) => void;
  timer: ReturnType<typeof setTimeout>;
};

export class HeldPolls {
  /** Oldest first. */
  private readonly waiters: Waiter[] = [];

  get size(): number {
    return this.waiters.length;
  }

  /** How many polls the agent has held right now. */
  heldBy(agentId: string): number {
    return this.waiters.filter((w) => w.agentId === agentId).length;
  }

  /** Whether the agent has a poll held right now. */
  holds(agentId: string): boolean {
    return this.waiters.some((w) => w.agentId === agentId);
  }

  /**
   * Holds a poll for up to `waitMs`; resolves with a job, an exit, or `none` when the wait ends.
   * The poll is in place when this returns, so no change made after it can slip past it.
   */
  hold(agentId: string, accepts: string, waitMs: number): Promise<PollOutcome> {
    return new Promise<PollOutcome>((resolve) => {
      const waiter: Waiter = {
        agentId,
        accepts,
        resolve,
        timer: setTimeout(() => this.settle(waiter, { kind: "none" }), waitMs),
      };
      this.waiters.push(waiter);
    });
  }

  /**
   * Matches held polls (oldest first) with queued jobs; offline agents' polls get an exit. Runs
   * after every change, so with nothing queued it costs two statements however many polls are
   * held, and with jobs queued it stops looking once the queue has nothing left for them.
   */
  dispatch(ctx: ops.OpsContext): void {
    if (this.waiters.length === 0) {
      return;
    }
    const offline = ctx.store.agents.offline();
    for (const waiter of [...this.waiters]) {
      const agent = offline.get(waiter.agentId);
      const exit = agent ? ops.exitFor(agent) : null;
      if (exit) {
        this.settle(waiter, { kind: "exit", exit });
      }
    }
    if (!ctx.store.jobs.hasQueued()) {
      return;
    }
    const nothingFor = new Set<string>();
    for (const waiter of [...this.waiters]) {
      if (nothingFor.has(waiter.accepts)) {
        continue;
      }
      const agent = ctx.store.agents.get(waiter.agentId);
      if (!agent) {
        // Gone while polling. Not expected (an agent goes offline, and its poll is answered with
        // an exit, before it can be dropped), but never lease to a row that is gone.
        this.settle(waiter, {
          kind: "exit",
          exit: { reason: "this agent is no longer registered" },
        });
        continue;
      }
      const job = ops.tryLease(ctx, agent, nothingFor);
      if (job) {
        this.settle(waiter, { kind: "job", job });
        if (!ctx.store.jobs.hasQueued()) {
          return;
        }
      }
    }
  }

  private settle(waiter: Waiter, outcome: PollOutcome): void {
    const index = this.waiters.indexOf(waiter);
    if (index >= 0) {
      this.waiters.splice(index, 1);
      clearTimeout(waiter.timer);
      waiter.resolve(outcome);
    }
  }
}
