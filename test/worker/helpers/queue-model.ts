/**
 * A deliberately naive reference model of the pool's rules (docs/queue.md), for the randomized
 * test: plain arrays, linear scans, no SQL. Time is model time in ms.
 */

export type Phase = "plan" | "apply";
export type ModelJob = {
  jobId: string;
  workspaceId: string;
  phase: Phase;
  cls: 0 | 1 | 2;
  round: number;
  seq: number;
  state: "queued" | "leased" | "started" | "ended";
  agentId: string | null;
  leaseId: string | null;
  leasedAt: number;
  cancelRequested: boolean;
  endedBy: string | null;
};
export type ModelAgent = {
  id: string;
  capacity: number;
  phases: Phase[];
  state: "online" | "unknown" | "errored" | "exited";
  lastContact: number;
  changedAt: number;
  dropped: boolean;
};
export type ModelSettings = {
  leaseStartMs: number;
  unknownAfterMs: number;
  erroredAfterMs: number;
  retentionMs: number;
};

export class QueueModel {
  readonly jobs: ModelJob[] = [];
  readonly agents: ModelAgent[] = [];
  private seq = 0;
  private readonly current = [0, 0, 0];
  private readonly wsNext = new Map<string, number>();
  now = 0;

  constructor(readonly settings: ModelSettings) {}

  addAgent(id: string, capacity: number, phases: Phase[]): void {
    this.agents.push({
      id,
      capacity,
      phases,
      state: "online",
      lastContact: this.now,
      changedAt: this.now,
      dropped: false,
    });
  }

  agent(id: string): ModelAgent {
    const agent = this.agents.find((a) => a.id === id);
    if (!agent) {
      throw new Error(`no agent ${id}`);
    }
    return agent;
  }

  job(jobId: string): ModelJob | undefined {
    return this.jobs.find((j) => j.jobId === jobId);
  }

  enqueue(jobId: string, workspaceId: string, phase: Phase, cls: 0 | 1 | 2): void {
    if (this.job(jobId)) {
      return;
    }
    const key = `${cls}/${workspaceId}`;
    const round = Math.max(this.wsNext.get(key) ?? 0, this.current[cls] ?? 0);
    this.wsNext.set(key, round + 1);
    this.jobs.push({
      jobId,
      workspaceId,
      phase,
      cls,
      round,
      seq: this.seq++,
      state: "queued",
      agentId: null,
      leaseId: null,
      leasedAt: 0,
      cancelRequested: false,
      endedBy: null,
    });
  }

  /** Contact from an agent: unknown agents come back; offline ones stay offline. */
  contact(agent: ModelAgent): void {
    if (agent.state === "online" || agent.state === "unknown") {
      if (agent.state === "unknown") {
        agent.changedAt = this.now;
      }
      agent.state = "online";
      agent.lastContact = this.now;
    }
  }

  held(agentId: string): ModelJob[] {
    return this.jobs.filter(
      (j) => j.agentId === agentId && (j.state === "leased" || j.state === "started"),
    );
  }

  /** The job a poll should lease, or "exit" / null. Leaves the lease id for `recordLease`. */
  poll(agentId: string): ModelJob | "exit" | null {
    const agent = this.agent(agentId);
    if (agent.state === "errored" || agent.state === "exited") {
      return "exit";
    }
    this.contact(agent);
    if (this.held(agentId).length >= agent.capacity) {
      return null;
    }
    const classes: (0 | 1 | 2)[] = [];
    if (agent.phases.includes("apply")) {
      classes.push(0);
    }
    if (agent.phases.includes("plan")) {
      classes.push(1, 2);
    }
    for (const cls of classes) {
      const candidates = this.jobs
        .filter((j) => j.state === "queued" && j.cls === cls)
        .sort((a, b) => a.round - b.round || a.seq - b.seq);
      const head = candidates[0];
      if (head) {
        head.state = "leased";
        head.agentId = agentId;
        head.leasedAt = this.now;
        this.current[cls] = Math.max(this.current[cls] ?? 0, head.round);
        return head;
      }
    }
    return null;
  }

  private holds(job: ModelJob | undefined, agentId: string, leaseId: string): job is ModelJob {
    return job !== undefined && job.agentId === agentId && job.leaseId === leaseId;
  }

  start(agentId: string, jobId: string, leaseId: string): "ok" | "lease_lost" {
    this.contact(this.agent(agentId));
    const job = this.job(jobId);
    if (!this.holds(job, agentId, leaseId) || (job.state !== "leased" && job.state !== "started")) {
      return "lease_lost";
    }
    job.state = "started";
    return "ok";
  }

  finish(agentId: string, jobId: string, leaseId: string): "ok" | "lease_lost" {
    this.contact(this.agent(agentId));
    const job = this.job(jobId);
    if (!this.holds(job, agentId, leaseId)) {
      return "lease_lost";
    }
    if (job.state === "ended") {
      return job.endedBy === agentId ? "ok" : "lease_lost";
    }
    job.state = "ended";
    job.endedBy = agentId;
    return "ok";
  }

  cancel(jobId: string, force: boolean): void {
    const job = this.job(jobId);
    if (!job) {
      return;
    }
    if (job.state === "queued" || job.state === "leased" || (job.state === "started" && force)) {
      job.state = "ended";
      job.endedBy = "system";
    } else if (job.state === "started") {
      job.cancelRequested = true;
    }
  }

  private requeue(job: ModelJob): void {
    job.state = "queued";
    job.agentId = null;
    job.leaseId = null;
  }

  /** Time passes; every deadline at or before the new time is handled, agents first. */
  advance(ms: number): void {
    this.now += ms;
    const s = this.settings;
    for (const agent of this.agents.filter((a) => !a.dropped)) {
      for (;;) {
        const due =
          agent.state === "online"
            ? agent.lastContact + s.unknownAfterMs
            : agent.state === "unknown"
              ? agent.changedAt + s.erroredAfterMs
              : agent.lastContact + s.retentionMs;
        if (due > this.now) {
          break;
        }
        if (agent.state === "online") {
          agent.state = "unknown";
          agent.changedAt = due;
        } else if (agent.state === "unknown") {
          for (const job of this.held(agent.id)) {
            if (job.state === "leased") {
              this.requeue(job);
            } else {
              job.state = "ended";
              job.endedBy = "system";
            }
          }
          agent.state = "errored";
          agent.changedAt = due;
        } else {
          agent.dropped = true;
          break;
        }
      }
    }
    for (const job of this.jobs) {
      if (job.state === "leased" && job.leasedAt + s.leaseStartMs <= this.now) {
        this.requeue(job);
      }
    }
  }

  status(agent: ModelAgent): string {
    if (agent.state !== "online") {
      return agent.state;
    }
    return this.held(agent.id).length > 0 ? "busy" : "idle";
  }
}

/** mulberry32: a small seeded PRNG, so a failing sequence can be replayed by its seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
