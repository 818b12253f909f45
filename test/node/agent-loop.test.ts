/**
 * The agent loop against a scripted coordinator (the HTTP client is tested separately and end
 * to end): backoff, re-registration, start-before-run, heartbeat cancels, finish retries, exit
 * instructions, shutdown and updates between jobs. Time is fake: every wait, backoff and
 * heartbeat interval is driven by the test.
 */

import type { HeartbeatResponse, JobsNextReceived, RunningJob } from "@outpost/protocol";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type AgentApi, TokenRejected } from "../../agent/src/client/agent-api.ts";
import { CoordinatorError } from "../../agent/src/client/http.ts";
import { ExitRequest, TransientError, UserError } from "../../agent/src/errors.ts";
import { EXIT_CODES } from "../../agent/src/exit-codes.ts";
import type { JobHandle } from "../../agent/src/job/runner.ts";
import type { JobResult } from "../../agent/src/job/types.ts";
import { createLogger } from "../../agent/src/logger.ts";
import { AgentLoop, type AgentLoopOptions } from "../../agent/src/poller.ts";
import type { StagedUpdate, Updater } from "../../agent/src/update/updater.ts";
import { NO_ISOLATION } from "./helpers/isolation.ts";

const LEASE = `lease_${"b".repeat(26)}`;
const AGENT_ID = `agt_${"z".repeat(26)}`;
const jobId = (n: number) => `run_${String(n).padStart(26, "a")}:plan`;
const SPEC = {
  operation: "plan",
  phase: "plan",
  isSpeculative: true,
  isDestroy: false,
  workspaceName: "w",
  engine: "terraform",
  engineVersion: "1.9.5",
  workingDirectory: "",
  configuration: {
    id: "cv",
    source: "upload",
    sha256: "a".repeat(64),
    sizeBytes: 1,
    repoUrl: null,
    commitSha: null,
  },
  isFork: false,
  planSha256: null,
};
const runJob = (n: number): JobsNextReceived => ({
  action: "run",
  job: {
    jobId: jobId(n),
    leaseId: LEASE,
    runId: jobId(n).split(":")[0] ?? "",
    workspaceId: "ws_1",
    phase: "plan",
    startBy: new Date(Date.now() + 30_000).toISOString(),
    spec: SPEC,
    runToken: "op_run_x",
    variables: [],
  },
});
const OK: JobResult = {
  outcome: "succeeded",
  message: null,
  exitCode: 0,
  planSummary: null,
  logLength: 1,
};
type Step<T> = T | Error;
type LoopApi = Pick<AgentApi, "register" | "next" | "start" | "heartbeat" | "finish" | "goodbye">;

/**
 * A coordinator that answers from scripts and records every call, typed against the real
 * client: a change to AgentApi's signatures breaks this class at compile time.
 */
class FakeCoordinator implements LoopApi {
  readonly calls: string[] = [];
  readonly beats: RunningJob[][] = [];
  readonly goodbyes: Array<string | null> = [];
  private readonly script: {
    register?: Array<Step<"ok">>;
    next?: Array<Step<JobsNextReceived | null>>;
    heartbeat?: (running: RunningJob[]) => Step<HeartbeatResponse>;
    finish?: Array<Step<"ok">>;
    agentVersion?: string | null;
  };

  constructor(script: FakeCoordinator["script"] = {}) {
    this.script = script;
  }

  private take<T>(queue: Array<Step<T>> | undefined, fallback: Step<T>): T {
    const step = queue?.shift() ?? fallback;
    if (step instanceof Error) {
      throw step;
    }
    return step;
  }

  register: LoopApi["register"] = async () => {
    this.calls.push("register");
    this.take(this.script.register, "ok");
    return {
      agentId: AGENT_ID,
      poolId: "pool_1",
      heartbeatIntervalSeconds: 1,
      pollWaitSeconds: 1,
      leaseStartTimeoutSeconds: 30,
      unknownAfterSeconds: 30,
      agentVersion: this.script.agentVersion ?? null,
    };
  };

  next: LoopApi["next"] = async (_wait, signal) => {
    this.calls.push("next");
    if ((this.script.next?.length ?? 0) > 0) {
      return this.take(this.script.next, null);
    }
    // A held long-poll: a second of (fake) time, cut short by the agent's signal.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 1_000);
      signal?.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve();
      });
    });
    if (signal?.aborted) {
      throw signal.reason;
    }
    return null;
  };

  start: LoopApi["start"] = async (id, leaseId) => {
    this.calls.push(`start ${id}`);
    return { jobId: id, leaseId, state: "started" };
  };

  heartbeat: LoopApi["heartbeat"] = async (running) => {
    this.calls.push("heartbeat");
    this.beats.push(running);
    const step = this.script.heartbeat?.(running) ?? {
      cancel: [],
      exit: null,
      heartbeatIntervalSeconds: 1,
    };
    if (step instanceof Error) {
      throw step;
    }
    return step;
  };

  finish: LoopApi["finish"] = async (id) => {
    this.calls.push(`finish ${id}`);
    this.take(this.script.finish, "ok");
    return { jobId: id, state: "ended", outcome: "succeeded" };
  };

  goodbye: LoopApi["goodbye"] = async (reason) => {
    this.calls.push("goodbye");
    this.goodbyes.push(reason);
    return { agentId: AGENT_ID, status: "exited" };
  };
}

/** Jobs that end when the test says so, recording cancels. */
function controllableJobs() {
  const jobs: Array<{ id: string; cancels: boolean[]; end(outcome?: JobResult): void }> = [];
  const startJob: NonNullable<AgentLoopOptions["startJob"]> = (assignment) => {
    let end: (outcome: JobResult) => void = () => {};
    const done = new Promise<JobResult>((resolve) => {
      end = resolve;
    });
    const job = { id: assignment.jobId, cancels: [] as boolean[], end: (o = OK) => end(o) };
    jobs.push(job);
    const handle: JobHandle = {
      done,
      cancel: ({ force }) => {
        job.cancels.push(force);
        if (force) {
          end({ ...OK, outcome: "canceled", message: "killed" });
        }
      },
    };
    return handle;
  };
  return { jobs, startJob };
}

function loop(
  api: LoopApi,
  startJob: AgentLoopOptions["startJob"],
  extra: Partial<AgentLoopOptions> = {},
) {
  return new AgentLoop({
    api,
    logger: createLogger({ level: "fatal", json: true, destination: { write: () => {} } }),
    address: "http://coordinator.test",
    name: null,
    concurrency: 1,
    accept: ["plan", "apply"],
    single: false,
    isolation: "none",
    shutdownGraceMs: 60_000,
    settings: {
      dataDir: "/nonexistent",
      hooksDir: "/nonexistent",
      hookTimeoutMs: 1000,
      envForward: [],
      hostEnv: {},
      networkEnv: {},
      releaseMirror: null,
      allowFileRepos: false,
      cancelGraceMs: 100,
      maxConfigurationBytes: 1024,
      isolation: NO_ISOLATION,
    },
    // The fake jobs never call the coordinator port.
    portFor: () => ({}) as ReturnType<AgentLoopOptions["portFor"]>,
    startJob,
    ...extra,
  });
}

/** Fake time moved per poll: the Retry-After and grace periods asserted below are multiples. */
const FAKE_STEP_MS = 250;

/**
 * Moves fake time on until `check` holds, failing when that takes more than `limitMs` of fake
 * time: `vi.waitFor` polls (bounded in real time) and each poll that finds `check` false advances
 * the fake clock one step, letting the timers the loop awaits fire in order.
 */
async function whenFakeTime(check: () => boolean, what: string, limitMs = 60_000): Promise<void> {
  const from = Date.now();
  const held = await vi.waitFor(
    async () => {
      if (check()) {
        return true;
      }
      if (Date.now() - from > limitMs) {
        return false;
      }
      await vi.advanceTimersByTimeAsync(FAKE_STEP_MS);
      throw new Error(`not yet: ${what}`);
    },
    { timeout: 20_000, interval: 0 },
  );
  expect(held, `${what} within ${limitMs} ms of fake time`).toBe(true);
}

/** Settles `promise` while fake time runs, so timers it waits on fire. */
async function settle<T>(promise: Promise<T>): Promise<T> {
  let done = false;
  const tracked = promise.finally(() => {
    done = true;
  });
  await whenFakeTime(() => done, "the loop ended", 600_000);
  return tracked;
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("the agent loop", () => {
  it("backs off through transient failures honouring Retry-After, starts before running, and --single ends with goodbye", async () => {
    const api = new FakeCoordinator({
      register: [new TransientError("connection refused")],
      next: [new TransientError("503"), new TransientError("429", { retryAfter: "3" }), runJob(1)],
    });
    const { jobs, startJob } = controllableJobs();
    const result = loop(api, startJob, { single: true }).run();
    await whenFakeTime(
      () => api.calls.filter((c) => c === "next").length === 2,
      "the 429 answered",
    );
    const after429 = Date.now();
    await whenFakeTime(() => jobs.length === 1, "the job started");
    expect(Date.now() - after429).toBeGreaterThanOrEqual(3_000);
    expect(api.calls.indexOf(`start ${jobId(1)}`)).toBeGreaterThan(-1);
    jobs[0]?.end();
    expect(await settle(result)).toBe(EXIT_CODES.ok);
    expect(api.calls.filter((c) => c === "register")).toHaveLength(2);
    expect(api.calls.slice(-2)).toEqual([`finish ${jobId(1)}`, "goodbye"]);
  });

  it("registers again when the coordinator no longer knows the agent", async () => {
    const api = new FakeCoordinator({
      next: [new CoordinatorError(404, "NOT_FOUND", "agent is not registered"), runJob(2)],
    });
    const { jobs, startJob } = controllableJobs();
    const result = loop(api, startJob, { single: true }).run();
    await whenFakeTime(() => jobs.length === 1, "the job started");
    jobs[0]?.end();
    expect(await settle(result)).toBe(EXIT_CODES.ok);
    expect(api.calls.slice(0, 4)).toEqual(["register", "next", "register", "next"]);
  });

  it("relays heartbeat cancels and lists the job until its finish is accepted", async () => {
    let cancelSent = false;
    const api = new FakeCoordinator({
      next: [runJob(3)],
      heartbeat: (running) => {
        const cancel =
          running.length > 0 && !cancelSent
            ? [{ jobId: jobId(3), leaseId: LEASE, mode: "graceful" as const, reason: "asked" }]
            : [];
        cancelSent ||= cancel.length > 0;
        return { cancel, exit: null, heartbeatIntervalSeconds: 1 };
      },
      finish: [new TransientError("502"), new TransientError("502")],
    });
    const { jobs, startJob } = controllableJobs();
    const agent = loop(api, startJob);
    const result = agent.run();
    await whenFakeTime(() => jobs[0]?.cancels.length === 1, "the cancel reached the job");
    expect(jobs[0]?.cancels).toEqual([false]);
    jobs[0]?.end({ ...OK, outcome: "canceled" });
    await whenFakeTime(
      () => api.calls.filter((c) => c.startsWith("finish")).length === 3,
      "finish retried",
    );
    const beatsWithJob = api.beats.filter((b) => b.some((r) => r.jobId === jobId(3)));
    expect(beatsWithJob.length).toBeGreaterThan(0);
    agent.stop();
    expect(await settle(result)).toBe(EXIT_CODES.ok);
    expect(api.calls.at(-1)).toBe("goodbye");
  });

  it("exits 4 on an exit instruction and kills running jobs; 3 when the token turns out revoked", async () => {
    const told = new FakeCoordinator({
      next: [runJob(4)],
      heartbeat: () => ({
        cancel: [],
        exit: { reason: "agent errored" },
        heartbeatIntervalSeconds: 1,
      }),
    });
    const first = controllableJobs();
    const toldError = await settle(
      loop(told, first.startJob)
        .run()
        .catch((e: unknown) => e),
    );
    expect(toldError).toBeInstanceOf(ExitRequest);
    expect((toldError as ExitRequest).exitCode).toBe(EXIT_CODES.toldToExit);
    expect(first.jobs[0]?.cancels).toContain(true);
    expect(told.calls).not.toContain("goodbye");

    const revoked = new FakeCoordinator({
      next: [{ action: "exit", exit: { reason: "its agent token was revoked" } }],
      heartbeat: () => new TokenRejected("the agent token has been revoked"),
    });
    const second = controllableJobs();
    const revokedError = await settle(
      loop(revoked, second.startJob)
        .run()
        .catch((e: unknown) => e),
    );
    expect((revokedError as ExitRequest).exitCode).toBe(EXIT_CODES.tokenRevoked);
  });

  it("stops polling on the first stop, lets the job run through the grace period, forces on the second", async () => {
    const api = new FakeCoordinator({ next: [runJob(5)] });
    const { jobs, startJob } = controllableJobs();
    const agent = loop(api, startJob);
    const result = agent.run();
    await whenFakeTime(() => jobs.length === 1, "the job started");
    agent.stop();
    await vi.advanceTimersByTimeAsync(59_000);
    expect(jobs[0]?.cancels).toEqual([]);
    agent.stop();
    expect(await settle(result)).toBe(EXIT_CODES.ok);
    // Forced only (idempotent, it may be repeated): never a graceful cancel first.
    expect(jobs[0]?.cancels[0]).toBe(true);
    expect(jobs[0]?.cancels).not.toContain(false);
    expect(api.calls.filter((c) => c === "next")).toHaveLength(1);
    expect(api.calls.slice(-2)).toEqual([`finish ${jobId(5)}`, "goodbye"]);
  });

  it("cancels gracefully once the grace period is over", async () => {
    const api = new FakeCoordinator({ next: [runJob(6)] });
    const { jobs, startJob } = controllableJobs();
    const agent = loop(api, startJob);
    const result = agent.run();
    await whenFakeTime(() => jobs.length === 1, "the job started");
    agent.stop();
    await whenFakeTime(() => (jobs[0]?.cancels.length ?? 0) > 0, "the graceful cancel", 61_000);
    expect(jobs[0]?.cancels).toEqual([false]);
    jobs[0]?.end({ ...OK, outcome: "canceled" });
    expect(await settle(result)).toBe(EXIT_CODES.ok);
  });

  it("reports a deleted pool as exit 4 and a route that is not there as a setting to fix", async () => {
    const gone = new FakeCoordinator({
      register: [new CoordinatorError(410, "GONE", "the agent pool of this token was deleted")],
    });
    const goneError = await settle(
      loop(gone, undefined)
        .run()
        .catch((e: unknown) => e),
    );
    expect(goneError).toBeInstanceOf(ExitRequest);
    expect((goneError as ExitRequest).exitCode).toBe(EXIT_CODES.toldToExit);
    const notThere = new FakeCoordinator({
      register: [new CoordinatorError(404, "NOT_FOUND", "POST /agent/v1/register answered 404")],
    });
    const notThereError = await settle(
      loop(notThere, undefined)
        .run()
        .catch((e: unknown) => e),
    );
    expect(notThereError).toBeInstanceOf(UserError);
    expect((notThereError as Error).message).toContain(
      "OUTPOST_ADDRESS does not point at an Outpost coordinator",
    );
    expect((notThereError as Error).message).not.toContain("deleted");
  });
});

describe("updates between jobs", () => {
  /** An updater whose download the test scripts; records what the loop asked of it. */
  function fakeUpdater(prepared: Array<StagedUpdate | null>) {
    const asked: string[] = [];
    let offered: string | null = null;
    const updater: Pick<Updater, "offer" | "isDue" | "prepare" | "install"> = {
      offer: (version) => {
        offered = version;
      },
      get isDue() {
        return offered !== null && prepared.length > 0;
      },
      prepare: async () => {
        asked.push("prepare");
        return prepared.shift() ?? null;
      },
      install: async (update) => {
        asked.push(`install ${update.version}`);
        return true;
      },
    };
    return { updater, asked };
  }

  it("waits for the running job, then installs, says goodbye and restarts in place", async () => {
    const api = new FakeCoordinator({ next: [runJob(7)] });
    const { jobs, startJob } = controllableJobs();
    const staged = { version: "9.9.9", file: "/tmp/new.mjs", sha256: "f".repeat(64) };
    const { updater, asked } = fakeUpdater([staged]);
    const restarts: StagedUpdate[] = [];
    const agent = loop(api, startJob, {
      updater,
      restart: (update) => {
        restarts.push(update);
        agent.stop();
      },
    });
    const result = agent.run();
    await whenFakeTime(() => jobs.length === 1, "the job started");
    // As the client does when an answer carries a newer Outpost-Agent-Version.
    updater.offer("9.9.9");
    await vi.advanceTimersByTimeAsync(5_000);
    expect(asked).toEqual([]);
    jobs[0]?.end();
    await whenFakeTime(() => restarts.length === 1, "the restart");
    expect(asked).toEqual(["prepare", "install 9.9.9"]);
    expect(api.goodbyes).toContain("updating to 9.9.9");
    expect(restarts[0]).toEqual(staged);
    await settle(result);
  });

  it("keeps running and polling when the download or its check fails", async () => {
    const api = new FakeCoordinator({ agentVersion: "9.9.9" });
    const { updater, asked } = fakeUpdater([null]);
    const restarts: StagedUpdate[] = [];
    const agent = loop(api, undefined, { updater, restart: (u) => restarts.push(u) });
    const result = agent.run();
    await whenFakeTime(() => asked.length === 1, "the download");
    const pollsBefore = api.calls.filter((c) => c === "next").length;
    await whenFakeTime(
      () => api.calls.filter((c) => c === "next").length > pollsBefore,
      "polling again",
    );
    expect(api.goodbyes).toEqual([]);
    expect(restarts).toEqual([]);
    agent.stop();
    expect(await settle(result)).toBe(EXIT_CODES.ok);
  });
});
