/**
 * The agent loop against a scripted coordinator (the HTTP client is tested separately and end
 * to end): backoff, re-registration, start-before-run, heartbeat cancels, finish retries, exit
 * instructions and shutdown.
 */

import type { HeartbeatResponse, JobsNextResponse, RunningJob } from "@outpost/protocol";
import { describe, expect, it } from "vitest";
import { TokenRejected } from "../../agent/src/client/agent-api.ts";
import { CoordinatorError } from "../../agent/src/client/http.ts";
import { ExitRequest, TransientError } from "../../agent/src/errors.ts";
import { EXIT_CODES } from "../../agent/src/exit-codes.ts";
import type { JobHandle } from "../../agent/src/job/runner.ts";
import type { JobOutcome } from "../../agent/src/job/types.ts";
import { createLogger } from "../../agent/src/logger.ts";
import { AgentLoop, type AgentLoopOptions } from "../../agent/src/poller.ts";

const LEASE = `lease_${"b".repeat(26)}`;
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
const runJob = (n: number): JobsNextResponse => ({
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
const OK: JobOutcome = {
  status: "succeeded",
  message: null,
  exitCode: 0,
  planSummary: null,
  logLength: 1,
};
type Step<T> = T | Error;

/** A coordinator that answers from scripts and records every call. */
function scripted(script: {
  register?: Array<Step<"ok">>;
  next?: Array<Step<JobsNextResponse | null>>;
  heartbeat?: (running: RunningJob[]) => Step<HeartbeatResponse>;
  finish?: Array<Step<"ok">>;
}) {
  const calls: string[] = [];
  const beats: RunningJob[][] = [];
  const take = <T>(queue: Array<Step<T>> | undefined, fallback: Step<T>): T => {
    const step = queue?.shift() ?? fallback;
    if (step instanceof Error) {
      throw step;
    }
    return step;
  };
  const api: AgentLoopOptions["api"] = {
    async register() {
      calls.push("register");
      take(script.register, "ok");
      return {
        agentId: `agt_${"z".repeat(26)}`,
        poolId: "pool_1",
        heartbeatIntervalSeconds: 1,
        pollWaitSeconds: 1,
        leaseStartTimeoutSeconds: 30,
      };
    },
    async next(_wait, signal) {
      calls.push("next");
      if ((script.next?.length ?? 0) === 0) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        if (signal?.aborted) {
          throw signal.reason;
        }
        return null;
      }
      return take(script.next, null);
    },
    async start(id, leaseId) {
      calls.push(`start ${id}`);
      return { jobId: id, leaseId, state: "started" };
    },
    async heartbeat(running) {
      calls.push("heartbeat");
      beats.push(running);
      const step = script.heartbeat?.(running) ?? {
        cancel: [],
        exit: null,
        heartbeatIntervalSeconds: 1,
      };
      if (step instanceof Error) {
        throw step;
      }
      return step;
    },
    async finish(id) {
      calls.push(`finish ${id}`);
      take(script.finish, "ok");
      return { jobId: id, state: "ended", outcome: "succeeded" };
    },
    async goodbye() {
      calls.push("goodbye");
      return { agentId: `agt_${"z".repeat(26)}`, status: "exited" };
    },
  };
  return { api, calls, beats };
}

/** Jobs that end when the test says so, recording cancels. */
function controllableJobs() {
  const jobs: Array<{ id: string; cancels: boolean[]; end(outcome?: JobOutcome): void }> = [];
  const startJob = ((assignment) => {
    let end: (outcome: JobOutcome) => void = () => {};
    const done = new Promise<JobOutcome>((resolve) => {
      end = resolve;
    });
    const job = { id: assignment.jobId, cancels: [] as boolean[], end: (o = OK) => end(o) };
    jobs.push(job);
    const handle: JobHandle = {
      done,
      cancel: ({ force }) => {
        job.cancels.push(force);
        if (force) {
          end({ ...OK, status: "canceled", message: "killed" });
        }
      },
    };
    return handle;
  }) as NonNullable<AgentLoopOptions["startJob"]>;
  return { jobs, startJob };
}

function loop(
  api: AgentLoopOptions["api"],
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
    shutdownGraceMs: 60_000,
    settings: {
      dataDir: "/nonexistent",
      hooksDir: "/nonexistent",
      hookTimeoutMs: 1000,
      envForward: [],
      hostEnv: {},
      releaseMirror: null,
      allowFileRepos: false,
      cancelGraceMs: 100,
      maxConfigurationBytes: 1024,
    },
    // The fake jobs never call the coordinator port.
    portFor: () => ({}) as ReturnType<AgentLoopOptions["portFor"]>,
    startJob,
    ...extra,
  });
}

async function eventually(check: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) {
      throw new Error(`never happened: ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("the agent loop", () => {
  it("backs off through transient failures honouring Retry-After, starts before running, and --single ends with goodbye", async () => {
    const { api, calls } = scripted({
      register: [new TransientError("connection refused")],
      next: [new TransientError("503"), new TransientError("429", { retryAfter: "1" }), runJob(1)],
    });
    const { jobs, startJob } = controllableJobs();
    const started = Date.now();
    const result = loop(api, startJob, { single: true }).run();
    await eventually(() => jobs.length === 1, "the job started", 8_000);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    expect(calls.indexOf(`start ${jobId(1)}`)).toBeGreaterThan(-1);
    jobs[0]?.end();
    expect(await result).toBe(EXIT_CODES.ok);
    expect(calls.filter((c) => c === "register")).toHaveLength(2);
    expect(calls.slice(-2)).toEqual([`finish ${jobId(1)}`, "goodbye"]);
  });

  it("registers again when the coordinator no longer knows the agent", async () => {
    const { api, calls } = scripted({
      next: [new CoordinatorError(404, "NOT_FOUND", "agent is not registered"), runJob(2)],
    });
    const { jobs, startJob } = controllableJobs();
    const result = loop(api, startJob, { single: true }).run();
    await eventually(() => jobs.length === 1, "the job started");
    jobs[0]?.end();
    expect(await result).toBe(EXIT_CODES.ok);
    expect(calls.slice(0, 4)).toEqual(["register", "next", "register", "next"]);
  });

  it("relays heartbeat cancels and lists the job until its finish is accepted", async () => {
    let cancelSent = false;
    const { api, calls, beats } = scripted({
      next: [runJob(3)],
      heartbeat: (running) => {
        const cancel =
          running.length > 0 && !cancelSent
            ? [
                {
                  jobId: jobId(3),
                  leaseId: LEASE,
                  mode: "graceful" as const,
                  reason: "cancel requested",
                },
              ]
            : [];
        cancelSent ||= cancel.length > 0;
        return { cancel, exit: null, heartbeatIntervalSeconds: 1 };
      },
      finish: [new TransientError("502"), new TransientError("502")],
    });
    const { jobs, startJob } = controllableJobs();
    const agent = loop(api, startJob);
    const result = agent.run();
    await eventually(() => jobs[0]?.cancels.length === 1, "the cancel reached the job", 5_000);
    expect(jobs[0]?.cancels).toEqual([false]);
    jobs[0]?.end({ ...OK, status: "canceled" });
    await eventually(
      () => calls.filter((c) => c.startsWith("finish")).length === 3,
      "finish retried",
      10_000,
    );
    const beatsWithJob = beats.filter((b) => b.some((r) => r.jobId === jobId(3)));
    expect(beatsWithJob.length).toBeGreaterThan(0);
    agent.stop();
    expect(await result).toBe(EXIT_CODES.ok);
    expect(calls.at(-1)).toBe("goodbye");
  }, 20_000);

  it("exits 4 on an exit instruction and kills running jobs; 3 when the token turns out revoked", async () => {
    const told = scripted({
      next: [runJob(4)],
      heartbeat: () => ({
        cancel: [],
        exit: { reason: "agent errored" },
        heartbeatIntervalSeconds: 1,
      }),
    });
    const first = controllableJobs();
    const toldError = await loop(told.api, first.startJob)
      .run()
      .catch((e: unknown) => e);
    expect(toldError).toBeInstanceOf(ExitRequest);
    expect((toldError as ExitRequest).exitCode).toBe(EXIT_CODES.toldToExit);
    expect(first.jobs[0]?.cancels).toContain(true);
    expect(told.calls).not.toContain("goodbye");

    const revoked = scripted({
      next: [{ action: "exit", exit: { reason: "its agent token was revoked" } }],
      heartbeat: () => new TokenRejected("the agent token has been revoked"),
    });
    const second = controllableJobs();
    const revokedError = await loop(revoked.api, second.startJob)
      .run()
      .catch((e: unknown) => e);
    expect((revokedError as ExitRequest).exitCode).toBe(EXIT_CODES.tokenRevoked);
  }, 10_000);

  it("stops polling on the first stop, waits for the job, and forces on the second", async () => {
    const { api, calls } = scripted({ next: [runJob(5)] });
    const { jobs, startJob } = controllableJobs();
    const agent = loop(api, startJob);
    const result = agent.run();
    await eventually(() => jobs.length === 1, "the job started");
    agent.stop();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(jobs[0]?.cancels).toEqual([]);
    agent.stop();
    expect(await result).toBe(EXIT_CODES.ok);
    expect(jobs[0]?.cancels).toEqual([true]);
    expect(calls.filter((c) => c === "next")).toHaveLength(1);
    expect(calls.slice(-2)).toEqual([`finish ${jobId(5)}`, "goodbye"]);
  });
});
