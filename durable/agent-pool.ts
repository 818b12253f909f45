/**
 * AgentPool: one Durable Object per agent pool. It holds the pool's job queue, agent registry and
 * leases in SQLite (all SQL in `pool-store.ts` and its sections, all rules in `queue.ts`,
 * `pool-ops.ts` and `pool-sweep.ts`) and keeps ONE alarm set to the earliest deadline of any
 * row. This class is the RPC surface, the held long-polls and the alarm. It never calls back
 * into the Worker: an ending it reports to a call (finish, cancel) is applied by the caller, and
 * every ending it creates on its own goes to the `JOB_EVENTS` queue. Semantics: docs/queue.md.
 */
import { DurableObject } from "cloudflare:workers";
import { fail, ok, type Result } from "@outpost/common";
import type { ExitInstruction, RunningJob } from "@outpost/protocol";
import { HeldPolls } from "./held-polls.ts";
import { sendDue } from "./outbox.ts";
import * as admin from "./pool-admin.ts";
import * as ops from "./pool-ops.ts";
import * as reports from "./pool-reports.ts";
import { type AgentRow, PoolStore } from "./pool-store.ts";
import { sweepDue } from "./pool-sweep.ts";
import {
  type AgentRef,
  type AgentView,
  type CancelOutcome,
  type FinishOutcome,
  type FinishReport,
  type HeartbeatOutcome,
  type JobView,
  type PollOutcome,
  type PoolReport,
  type PoolSettings,
  QueuedJob,
  type RegisterInput,
  type RegisterOutcome,
  type WaitInfo,
} from "./pool-types.ts";
import { toJobView } from "./pool-views.ts";
import { DEFAULT_POOL_SETTINGS, HEARTBEAT_INTERVAL_SECONDS, mergeSettings } from "./queue.ts";

export class AgentPool extends DurableObject<Env> {
  /** The pool's clock. Tests move it forward through `runInDurableObject`; nothing else does. */
  now: () => number = () => Date.now();
  private readonly store: PoolStore;
  private settings: PoolSettings = DEFAULT_POOL_SETTINGS;
  private readonly polls = new HeldPolls();
  /** The alarm as last set, so a change that does not move it costs no storage call. */
  private alarmAt: number | null | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.store = new PoolStore(ctx.storage.sql);
    void ctx.blockConcurrencyWhile(async () => {
      this.store.migrate();
      this.settings = this.store.settings.read();
    });
  }

  /** Applies the pool's liveness settings (null → default); every deadline moves with them. */
  async configure(
    overrides: Partial<Record<keyof PoolSettings, number | null>>,
  ): Promise<PoolSettings> {
    this.settings = mergeSettings(overrides);
    this.store.settings.write(this.settings);
    await this.afterChange();
    return this.settings;
  }

  /**
   * Queues a job and says where it waits. Idempotent by job id: a job already known (in any
   * state, even ended) is returned as it is and never queued twice. A matching held poll is
   * answered at once.
   */
  async enqueue(
    input: QueuedJob,
  ): Promise<
    Result<{ job: JobView; created: boolean; wait: WaitInfo }, "invalid_job" | "pool_deleted">
  > {
    const parsed = QueuedJob.safeParse(input);
    if (!parsed.success) {
      return fail("invalid_job");
    }
    if (this.store.settings.isRetired()) {
      return fail("pool_deleted");
    }
    const existing = this.store.jobs.get(parsed.data.jobId);
    const inserted = existing ?? this.store.jobs.insert(parsed.data, this.now());
    if (!existing) {
      await this.afterChange();
    }
    // A held poll may have leased it meanwhile: its wait is said of the job as it is now.
    const row = this.store.jobs.get(parsed.data.jobId) ?? inserted;
    const wait = reports.waitInfo(this.ops(), row);
    return ok({ job: toJobView(row), created: !existing, wait });
  }

  /**
   * Cancels a job: queued or leased-unstarted ends now; started gets a cancel request delivered
   * with the agent's next heartbeat, or with `force` ends now. Canceling an ended job is a no-op.
   * The answer carries the ending when this call ended the job; the caller applies it.
   */
  async cancelJob(
    jobId: string,
    options: { force?: boolean } = {},
  ): Promise<Result<CancelOutcome, "not_found">> {
    const result = ops.cancel(this.ops(), jobId, options.force === true);
    await this.afterChange();
    return result;
  }

  /** Why a job still waits: no agent registered or online, all busy, wrong phase, or its place. */
  async whyWaiting(jobId: string): Promise<Result<WaitInfo, "not_found">> {
    const job = this.store.jobs.get(jobId);
    return job ? ok(reports.waitInfo(this.ops(), job)) : fail("not_found");
  }

  /** True when an online agent holds (has leased or started) one of `jobIds`. */
  async heldByLiveAgent(jobIds: string[]): Promise<boolean> {
    return reports.heldByLiveAgent(this.ops(), jobIds);
  }

  async getJob(jobId: string): Promise<JobView | null> {
    const row = this.store.jobs.get(jobId);
    return row ? toJobView(row) : null;
  }

  /** The jobs the pool knows among `jobIds`, in any state; unknown ids are left out. */
  async getJobs(jobIds: string[]): Promise<JobView[]> {
    return jobIds.flatMap((id) => {
      const row = this.store.jobs.get(id);
      return row ? [toJobView(row)] : [];
    });
  }

  /** Registered agents with status and jobs; offline agents past the retention window are gone. */
  async listAgents(): Promise<AgentView[]> {
    return reports.listedAgents(this.ops());
  }

  /** Listed agents by status and the queue's size, for the pools list (a `PoolSummary`). */
  async summary() {
    return reports.poolSummary(this.ops());
  }

  /** Agents by status, agents holding jobs, jobs by phase and the queue's oldest: a `PoolReport`. */
  async report(): Promise<PoolReport> {
    return reports.poolReport(this.ops());
  }

  /** Each token's last contact by its agents: polls and heartbeats are recorded here, not in D1. */
  async tokenLastContact(): Promise<Record<string, number>> {
    return this.store.agents.lastContactByToken();
  }

  /** Registers an agent under the token that authenticated it. */
  async register(
    input: RegisterInput,
  ): Promise<Result<RegisterOutcome, "pool_deleted" | "too_many_agents">> {
    const registered = admin.registerAgent(this.ops(), input);
    await this.afterChange();
    return registered;
  }

  /**
   * Asks for work: leases the next matching job now, or holds the call up to `waitMs` (at most
   * 50 s) and answers the moment one is queued. A held poll counts as contact throughout.
   */
  async pollJob(
    ref: AgentRef,
    waitMs: number,
  ): Promise<Result<PollOutcome, "agent_not_found" | "too_many_polls">> {
    const agent = ops.resolveAgent(this.store, ref);
    if (!agent) {
      return fail("agent_not_found");
    }
    // An agent polls once per free slot: more held polls than its capacity is a flood.
    if (this.polls.heldBy(agent.id) >= agent.capacity) {
      return fail("too_many_polls");
    }
    const exit = ops.exitFor(agent);
    if (exit) {
      return ok({ kind: "exit", exit });
    }
    const { job, wait } = ops.beginPoll(this.ops(), agent, waitMs);
    if (job || wait === 0) {
      await this.afterChange();
      return ok(job ? { kind: "job", job } : { kind: "none" });
    }
    // The poll is held before the first await, so no enqueue can slip past it.
    const held = this.polls.hold(agent.id, agent.accepts, wait);
    await this.scheduleAlarm();
    const outcome = await held;
    ops.endHold(this.ops(), agent.id, outcome, this.polls.holds(agent.id));
    await this.afterChange();
    return ok(outcome);
  }

  /** Two-phase acknowledge; the job then ends only via its agent or a timeout. Names the agent. */
  async startJob(ref: AgentRef, jobId: string, leaseId: string) {
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

  /** The agent's report that a job ended, answered with the ending; repeating it answers the same. */
  async finishJob(
    ref: AgentRef,
    jobId: string,
    leaseId: string,
    report: FinishReport,
  ): Promise<Result<FinishOutcome, "agent_not_found" | ops.LeaseFailure>> {
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
    this.polls.dispatch(this.ops());
    this.store.retire();
    await this.afterChange();
  }

  /** Every overdue deadline handled, endings sent to the queue, the next alarm set. Idempotent. */
  override async alarm(): Promise<void> {
    this.alarmAt = undefined;
    this.store.outbox.mayBeDue = true;
    sweepDue(this.ops());
    await this.afterChange();
  }

  private ops(): ops.OpsContext {
    return { store: this.store, settings: this.settings, now: this.now() };
  }

  private async withAgent<T, R extends string>(
    ref: AgentRef,
    run: (ctx: ops.OpsContext, agent: AgentRow) => Result<T, R>,
  ): Promise<Result<T, R | "agent_not_found">> {
    const agent = ops.resolveAgent(this.store, ref);
    if (!agent) {
      return fail("agent_not_found");
    }
    const ctx = this.ops();
    const result = run(
      ctx,
      this.store.agents.touch(agent, ctx.now, agent.poll_held_until, ctx.settings),
    );
    await this.afterChange();
    return result;
  }

  /** After any mutation: answer held polls that can now be served, send endings, re-arm the alarm. */
  private async afterChange(): Promise<void> {
    this.polls.dispatch(this.ops());
    await sendDue(this.store, this.env.JOB_EVENTS, this.now);
    await this.scheduleAlarm();
  }

  /** The one alarm: the earliest deadline of any row, or none when nothing is due. */
  private async scheduleAlarm(): Promise<void> {
    if (this.alarmAt === undefined) {
      this.alarmAt = await this.ctx.storage.getAlarm();
    }
    const next = this.store.earliestDue();
    if (next === this.alarmAt) {
      return;
    }
    this.alarmAt = next;
    await (next === null ? this.ctx.storage.deleteAlarm() : this.ctx.storage.setAlarm(next));
  }
}
