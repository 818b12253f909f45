/**
 * AgentPool: one Durable Object per agent pool. It holds the pool's job queue, agent registry and
 * leases in SQLite and keeps ONE alarm set to the earliest deadline of any row. The rules live in
 * `queue.ts` (pure) and `pool-ops.ts`; this class is the RPC surface, the held long-polls, the
 * alarm and the delivery of job-ended events. Semantics: docs/queue.md.
 */
import { DurableObject } from "cloudflare:workers";
import { type ExitInstruction, MAX_POLL_WAIT_SECONDS, type RunningJob } from "@outpost/protocol";
import { onJobEnded } from "../src/jobs/hooks.ts";
import { fail, ok, type Result } from "../src/lib/result.ts";
import { deliverDue, hasPending } from "./outbox.ts";
import * as admin from "./pool-admin.ts";
import * as ops from "./pool-ops.ts";
import {
  earliestDue,
  getAgent,
  getJob,
  hasQueued,
  insertJob,
  lastContactByToken,
  offlineAgents,
  readSettings,
  toJobView,
  touchAgent,
  writeSettings,
} from "./pool-store.ts";
import {
  type AgentRef,
  type AgentView,
  type FinishReport,
  type HeartbeatOutcome,
  type JobEndedEvent,
  type JobView,
  type PollOutcome,
  type PoolSettings,
  QueuedJob,
  type RegisterInput,
  type WaitInfo,
} from "./pool-types.ts";
import { DEFAULT_POOL_SETTINGS, HEARTBEAT_INTERVAL_SECONDS, mergeSettings } from "./queue.ts";
import { applySchema } from "./schema.ts";

type Waiter = {
  agentId: string;
  /** The agent's phases as registered (they never change), to skip what the queue lacks. */
  accepts: string;
  resolve: (outcome: PollOutcome) => void;
  timer: ReturnType<typeof setTimeout>;
};

export type RegisterOutcome = {
  agentId: string;
  heartbeatIntervalSeconds: number;
  pollWaitSeconds: number;
  leaseStartTimeoutSeconds: number;
};

export class AgentPool extends DurableObject<Env> {
  private readonly sql: SqlStorage;
  private settings: PoolSettings = DEFAULT_POOL_SETTINGS;
  /** Held long-polls, oldest first. In memory only: a lost waiter is a poll that ended early. */
  private readonly waiters: Waiter[] = [];

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.sql = ctx.storage.sql;
    void ctx.blockConcurrencyWhile(async () => {
      applySchema(this.sql);
      this.settings = readSettings(this.sql);
    });
  }

  /** Applies the pool's liveness settings (null → default); every deadline moves with them. */
  async configure(
    overrides: Partial<Record<keyof PoolSettings, number | null>>,
  ): Promise<PoolSettings> {
    this.settings = mergeSettings(overrides);
    writeSettings(this.sql, this.settings);
    await this.afterChange();
    return this.settings;
  }

  /**
   * Queues a job. Idempotent by job id: a job already known (in any state, even ended) is
   * returned as it is and never queued twice. A matching held poll is answered at once.
   */
  async enqueue(
    input: QueuedJob,
  ): Promise<Result<{ job: JobView; created: boolean }, "invalid_job" | "pool_deleted">> {
    const parsed = QueuedJob.safeParse(input);
    if (!parsed.success) {
      return fail("invalid_job");
    }
    if (admin.isRetired(this.sql)) {
      return fail("pool_deleted");
    }
    const existing = getJob(this.sql, parsed.data.jobId);
    if (existing) {
      return ok({ job: toJobView(existing), created: false });
    }
    insertJob(this.sql, parsed.data, Date.now());
    await this.afterChange();
    const row = getJob(this.sql, parsed.data.jobId);
    if (!row) {
      throw new Error(`job ${parsed.data.jobId} lost after enqueue`);
    }
    return ok({ job: toJobView(row), created: true });
  }

  /**
   * Cancels a job: queued or leased-unstarted ends now; started gets a cancel request delivered
   * with the agent's next heartbeat, or with `force` ends now. Canceling an ended job is a no-op.
   */
  async cancelJob(
    jobId: string,
    options: { force?: boolean } = {},
  ): Promise<Result<JobView, "not_found">> {
    const result = ops.cancel(this.ops(), jobId, options.force === true);
    await this.afterChange();
    return result;
  }

  /** Why a job still waits: no agent registered or online, all busy, wrong phase, or its place. */
  async whyWaiting(jobId: string): Promise<Result<WaitInfo, "not_found">> {
    return ops.waitInfo(this.ops(), jobId);
  }

  async getJob(jobId: string): Promise<JobView | null> {
    const row = getJob(this.sql, jobId);
    return row ? toJobView(row) : null;
  }

  /** Registered agents with status and jobs; offline agents past the retention window are gone. */
  async listAgents(): Promise<AgentView[]> {
    return ops.listedAgents(this.ops());
  }

  /**
   * When each token was last used by its agents: polls and heartbeats are recorded here, not in
   * D1, so the token listing takes the later of this and D1's `last_used_at`.
   */
  async tokenLastContact(): Promise<Record<string, number>> {
    return lastContactByToken(this.sql);
  }

  /** Registers an agent under the token that authenticated it. */
  async register(input: RegisterInput): Promise<Result<RegisterOutcome, "pool_deleted">> {
    if (admin.isRetired(this.sql)) {
      return fail("pool_deleted");
    }
    const agentId = admin.registerAgent(this.ops(), input);
    await this.afterChange();
    return ok({
      agentId,
      heartbeatIntervalSeconds: HEARTBEAT_INTERVAL_SECONDS,
      pollWaitSeconds: MAX_POLL_WAIT_SECONDS,
      leaseStartTimeoutSeconds: Math.ceil(this.settings.leaseStartTimeoutMs / 1000),
    });
  }

  /**
   * Asks for work: leases the next matching job now, or holds the call up to `waitMs` (at most
   * 50 s) and answers the moment one is queued. A held poll counts as contact throughout.
   */
  async pollJob(ref: AgentRef, waitMs: number): Promise<Result<PollOutcome, "agent_not_found">> {
    const agent = ops.resolveAgent(this.sql, ref);
    if (!agent) {
      return fail("agent_not_found");
    }
    const exit = ops.exitFor(agent);
    if (exit) {
      return ok({ kind: "exit", exit });
    }
    const now = Date.now();
    const wait = Math.min(Math.max(0, Math.floor(waitMs)), MAX_POLL_WAIT_SECONDS * 1000);
    // One write for an idle poll: the contact and the hold about to start. A job leased at once
    // takes the hold back; a hold that runs its course needs no second write.
    const holdUntil =
      wait > 0 ? Math.max(agent.poll_held_until ?? 0, now + wait) : agent.poll_held_until;
    const online = touchAgent(this.sql, agent, now, holdUntil, this.settings);
    const job = ops.tryLease(this.ops(), online);
    if (job || wait === 0) {
      if (holdUntil !== agent.poll_held_until) {
        touchAgent(this.sql, online, now, agent.poll_held_until, this.settings);
      }
      await this.afterChange();
      return ok(job ? { kind: "job", job } : { kind: "none" });
    }
    // The waiter is in place before the first await, so no enqueue can slip past it.
    const held = new Promise<PollOutcome>((resolve) => {
      const waiter: Waiter = {
        agentId: agent.id,
        accepts: agent.accepts,
        resolve,
        timer: setTimeout(() => this.settle(waiter, { kind: "none" }), wait),
      };
      this.waiters.push(waiter);
    });
    await this.scheduleAlarm();
    const outcome = await held;
    const after = getAgent(this.sql, agent.id);
    const stillHeld = this.waiters.some((w) => w.agentId === agent.id);
    // A hold that ran its course left the contact right (held until now). An early answer, or
    // another poll of the same agent still held, records the contact now.
    if (after && (outcome.kind !== "none" || stillHeld)) {
      touchAgent(
        this.sql,
        after,
        Date.now(),
        stillHeld ? after.poll_held_until : null,
        this.settings,
      );
    }
    await this.afterChange();
    return ok(outcome);
  }

  /** Two-phase acknowledge of a lease; after it, the job can only end through its agent or a timeout. */
  async startJob(
    ref: AgentRef,
    jobId: string,
    leaseId: string,
  ): Promise<Result<JobView, "agent_not_found" | ops.LeaseFailure>> {
    return this.withAgent(ref, (ctx, agent) => ops.start(ctx, agent, jobId, leaseId));
  }

  /** Renews the listed leases; answers cancel requests and, for an offline agent, an exit. */
  async heartbeat(
    ref: AgentRef,
    running: RunningJob[],
  ): Promise<Result<HeartbeatOutcome, "agent_not_found">> {
    return this.withAgent(ref, (ctx, agent) => {
      const exit: ExitInstruction | null = ops.exitFor(agent);
      const cancel = exit
        ? running.map((r) => ({ ...r, mode: "force" as const, reason: exit.reason }))
        : ops.heartbeat(ctx, agent, running);
      return ok({ cancel, exit, heartbeatIntervalSeconds: HEARTBEAT_INTERVAL_SECONDS });
    });
  }

  /** The agent's report that a job ended; repeating it answers the same. */
  async finishJob(
    ref: AgentRef,
    jobId: string,
    leaseId: string,
    report: FinishReport,
  ): Promise<Result<JobView, "agent_not_found" | ops.LeaseFailure>> {
    return this.withAgent(ref, (ctx, agent) => ops.finish(ctx, agent, jobId, leaseId, report));
  }

  /** Graceful exit: unstarted leases return to the queue, jobs still running fail. */
  async goodbye(
    ref: AgentRef,
    reason: string | null,
  ): Promise<Result<{ agentId: string }, "agent_not_found">> {
    return this.withAgent(ref, (ctx, agent) => {
      admin.sayGoodbye(ctx, agent, reason);
      return ok({ agentId: agent.id });
    });
  }

  /** A revoked token's agents are told to exit; their running jobs fail, unstarted ones requeue. */
  async revokeToken(tokenId: string): Promise<{ agentIds: string[] }> {
    const agentIds = admin.revokeTokenAgents(this.ops(), tokenId);
    await this.afterChange();
    return { agentIds };
  }

  /** The pool is being deleted: every unfinished job errors, every agent is told to exit, storage is emptied. */
  async retire(): Promise<void> {
    admin.retirePool(this.ops());
    this.dispatch();
    while (hasPending(this.sql)) {
      const { delivered } = await deliverDue(this.sql, (e) => this.deliver(e), {
        ignoreSchedule: true,
      });
      if (delivered === 0) {
        break;
      }
    }
    admin.clearRetiredPool(this.sql);
    await this.scheduleAlarm();
  }

  /** Every overdue deadline handled, events delivered, the next alarm set. Idempotent. */
  override async alarm(): Promise<void> {
    ops.sweepDue(this.ops());
    await this.afterChange();
  }

  private ops(): ops.OpsContext {
    return { sql: this.sql, settings: this.settings, now: Date.now() };
  }

  private async withAgent<T, R extends string>(
    ref: AgentRef,
    run: (ctx: ops.OpsContext, agent: NonNullable<ReturnType<typeof getAgent>>) => Result<T, R>,
  ): Promise<Result<T, R | "agent_not_found">> {
    const agent = ops.resolveAgent(this.sql, ref);
    if (!agent) {
      return fail("agent_not_found");
    }
    const ctx = this.ops();
    const current = touchAgent(this.sql, agent, ctx.now, agent.poll_held_until, this.settings);
    const result = run(ctx, current);
    await this.afterChange();
    return result;
  }

  /** After any mutation: answer held polls that can now be served, deliver events, re-arm the alarm. */
  private async afterChange(): Promise<void> {
    this.dispatch();
    await this.scheduleAlarm();
    const { delivered, failed } = await deliverDue(this.sql, (e) => this.deliver(e), {
      ignoreSchedule: false,
    });
    if (delivered + failed > 0) {
      await this.scheduleAlarm();
    }
  }

  private deliver(event: JobEndedEvent): Promise<void> {
    return onJobEnded(this.env, event);
  }

  /**
   * Matches held polls (oldest first) with queued jobs; offline agents' polls get an exit. Runs
   * after every change, so with nothing queued it costs two statements however many polls are
   * held, and with jobs queued it stops looking once the queue has nothing left for them.
   */
  private dispatch(): void {
    if (this.waiters.length === 0) {
      return;
    }
    const offline = offlineAgents(this.sql);
    for (const waiter of [...this.waiters]) {
      const agent = offline.get(waiter.agentId);
      const exit = agent ? ops.exitFor(agent) : null;
      if (exit) {
        this.settle(waiter, { kind: "exit", exit });
      }
    }
    if (!hasQueued(this.sql)) {
      return;
    }
    const nothingFor = new Set<string>();
    for (const waiter of [...this.waiters]) {
      if (nothingFor.has(waiter.accepts)) {
        continue;
      }
      const agent = getAgent(this.sql, waiter.agentId);
      if (!agent) {
        // Gone while polling. Not expected (an agent goes offline, and its poll is answered with
        // an exit, before it can be dropped), but never lease to a row that is gone.
        this.settle(waiter, {
          kind: "exit",
          exit: { reason: "this agent is no longer registered" },
        });
        continue;
      }
      const job = ops.tryLease(this.ops(), agent, nothingFor);
      if (job) {
        this.settle(waiter, { kind: "job", job });
        if (!hasQueued(this.sql)) {
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

  /** The one alarm: the earliest deadline of any row, or none when nothing is due. */
  private async scheduleAlarm(): Promise<void> {
    const next = earliestDue(this.sql);
    if (next === null) {
      await this.ctx.storage.deleteAlarm();
      return;
    }
    if ((await this.ctx.storage.getAlarm()) !== next) {
      await this.ctx.storage.setAlarm(next);
    }
  }
}
