/**
 * Hostile workspace code on a shared agent, end to end: the real coordinator, the real agent with
 * `--concurrency 2`, and two jobs at once whose stand-in engine (STANDIN_PROBE, see
 * test/fixtures/terraform) tries what the attack on a shared agent does: every process
 * environment in /proc (the agent's token, the other job's run token), the agent's data
 * directory, the other job's directory and its `outpost.auto.tfvars.json` with a sensitive value,
 * the agent's token and config files, and a write into the engine cache. Under `--isolation
 * bwrap` every probe fails; under `none` the test records what such code reaches, as
 * docs/security.md states it.
 */
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Barrier } from "./helpers/barrier.ts";
import {
  createWorkspace,
  expectStatus,
  queueRun,
  readRunLog,
  setVariable,
  uploadConfiguration,
  waitForRun,
} from "./helpers/e2e.ts";
import { type AgentProcess, exitWithin } from "./helpers/processes.ts";
import { useWorld } from "./helpers/world.ts";

type Environ = {
  pid: number;
  program: string;
  jobId: string | null;
  tokens: { kind: "agent" | "run"; own: boolean; hash: string }[];
  hashes: string[];
};
type Probes = {
  environs: Environ[];
  processes: number;
  dataDir: { dir: string; entries: string[] | string };
  otherJobs: { others: string[]; tfvars: { file: string; hashes: string[] }[] };
  files: { file: string; readable: boolean; hash?: string; code?: string }[];
  wroteEngineCache: boolean;
};
type ProbedJob = { runId: string; jobId: string; secret: string; probes: Probes; log: string };

const world = useWorld();
let base: string;
const barrier = new Barrier(2);

beforeAll(async () => {
  await barrier.start();
  // Outside /tmp, which a sandbox replaces with its own: what is hidden is hidden by the sandbox.
  base = mkdtempSync(path.join("/var/tmp", "outpost-isolation-"));
});
afterAll(async () => {
  await barrier.stop();
  rmSync(base, { recursive: true, force: true });
});

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

function parseProbes(log: string): Probes {
  const lines = new Map<string, Record<string, unknown>>();
  for (const match of log.matchAll(/^standin-probe (\{.*\})$/gm)) {
    const line = JSON.parse(match[1] ?? "{}") as Record<string, unknown>;
    lines.set(String(line.probe), line);
  }
  const get = (name: string) => {
    const line = lines.get(name);
    if (line === undefined) {
      throw new Error(`the job printed no ${name} probe:\n${log}`);
    }
    return line;
  };
  return {
    environs: get("proc-environ").environs as Environ[],
    processes: Number(get("proc-environ").processes),
    dataDir: get("data-dir") as Probes["dataDir"],
    otherJobs: get("other-jobs") as Probes["otherJobs"],
    files: get("files").files as Probes["files"],
    wroteEngineCache: get("write-engine-cache").wrote === true,
  };
}

/**
 * Starts an agent with `--concurrency 2` and `--isolation mode`, runs two probing plans at once
 * on it (they meet at the barrier before and after probing), stops it and returns both jobs.
 */
async function probeWith(
  mode: "bwrap" | "none",
): Promise<{ jobs: [ProbedJob, ProbedJob]; agent: AgentProcess; secretFiles: string[] }> {
  const home = path.join(base, mode);
  const dataDir = path.join(home, "data");
  const etc = path.join(home, "etc");
  mkdirSync(etc, { recursive: true });
  const tokenFile = path.join(etc, "token");
  writeFileSync(tokenFile, `${world.agentToken}\n`, { mode: 0o600 });
  const configFile = path.join(etc, "agent.yaml");
  writeFileSync(configFile, `name: probe-${mode}\nconcurrency: 2\n`);
  // The sandboxed agent reads its token from a file, the other one from OUTPOST_TOKEN: each is
  // then tried by the jobs.
  const agent = world.startAgent({
    dataDir,
    ...(mode === "bwrap" ? { tokenFile } : {}),
    args: ["--config", configFile, "--isolation", mode],
  });
  await agent.waitForOutput(/registered/);
  const secretFiles = mode === "bwrap" ? [tokenFile, configFile] : [configFile];
  const jobs = await Promise.all(
    ["a", "b"].map(async (name) => {
      const secret = `${mode}-${name}-secret-${sha256(`${mode}${name}`).slice(0, 12)}`;
      const ws = await createWorkspace(world, `probe-${mode}-${name}`, {
        env: {
          STANDIN_PROBE: "1",
          STANDIN_PROBE_BARRIER: `${barrier.url}/${mode}`,
          STANDIN_PROBE_FILES: secretFiles.join(","),
        },
      });
      await setVariable(world, ws, "db_password", secret, {
        category: "terraform",
        sensitive: true,
      });
      await uploadConfiguration(world, ws, {
        "main.tf": `variable "db_password" {}\nresource "null_resource" "a" { value = "x" }\n`,
      });
      const runId = await queueRun(world, ws, { operation: "plan" });
      return { runId, secret };
    }),
  );
  const done: ProbedJob[] = [];
  for (const job of jobs) {
    const run = await waitForRun(world, job.runId, ["planned_and_finished", "errored"], 60_000);
    const log = await readRunLog(world, job.runId, "plan");
    expect(run.status, log).toBe("planned_and_finished");
    done.push({ ...job, jobId: `${job.runId}:plan`, probes: parseProbes(log), log });
  }
  // Both jobs probed while the other was running.
  expect(barrier.arrivals.get(`/${mode}/ready`)).toBe(2);
  expect(barrier.arrivals.get(`/${mode}/probed`)).toBe(2);
  agent.kill("SIGTERM");
  await exitWithin(agent, 20_000);
  return { jobs: [done[0], done[1]] as [ProbedJob, ProbedJob], agent, secretFiles };
}

async function agentIsolation(name: string): Promise<unknown> {
  const pool = await expectStatus(world.api("GET", `/api/v1/pools/${world.poolId}`), 200);
  const agents = pool.agents as { name: string; isolation: unknown }[];
  return agents.find((a) => a.name === name)?.isolation;
}

describe("two jobs at once on an agent with --isolation bwrap", () => {
  it("every probe fails: no agent token, no other job's token, files or directory, no data dir, no engine cache write", async () => {
    const { jobs, agent, secretFiles } = await probeWith("bwrap");
    const agentToken = sha256(world.agentToken);
    for (const [job, other] of [jobs, [jobs[1], jobs[0]]] as const) {
      const p = job.probes;
      // /proc shows the sandbox alone: its init and the engine, all of this job.
      expect(p.processes).toBeLessThan(6);
      for (const environ of p.environs) {
        expect([job.jobId, null]).toContain(environ.jobId);
        expect(environ.tokens.filter((t) => !(t.kind === "run" && t.own))).toEqual([]);
        expect(environ.hashes).not.toContain(agentToken);
        expect(environ.hashes).not.toContain(sha256(other.secret));
      }
      // The data directory is empty but for the mount points of what this job may use.
      expect(p.dataDir.entries).toEqual(["engines", "jobs"]);
      expect(p.otherJobs).toEqual(expect.objectContaining({ others: [], tfvars: [] }));
      expect(p.files).toEqual(
        secretFiles.map((file) => ({ file, readable: false, code: "EACCES" })),
      );
      expect(p.wroteEngineCache).toBe(false);
      expect(job.log).not.toContain(world.agentToken);
    }
    expect(agent.output()).toMatch(/isolation[":= ]+bwrap/);
    expect(await agentIsolation("probe-bwrap")).toBe("bwrap");
  });
});

describe("two jobs at once on an agent with --isolation none (what docs/security.md warns of)", () => {
  it("reads the other job's run token, directory and sensitive tfvars, the config file and the data dir; the agent token is erased from its environ", async () => {
    const { jobs, agent, secretFiles } = await probeWith("none");
    const agentToken = sha256(world.agentToken);
    for (const [job, other] of [jobs, [jobs[1], jobs[0]]] as const) {
      const p = job.probes;
      // The other job's engine: its environment, with its run token, is readable.
      const otherEngine = p.environs.filter((e) => e.jobId === other.jobId);
      expect(otherEngine.length).toBeGreaterThan(0);
      expect(otherEngine.flatMap((e) => e.tokens)).toContainEqual(
        expect.objectContaining({ kind: "run", own: false }),
      );
      // The other job's directory and its sensitive value.
      expect(p.otherJobs.others.some((name) => name.startsWith(other.runId))).toBe(true);
      expect(p.otherJobs.tfvars.flatMap((t) => t.hashes)).toContain(sha256(other.secret));
      expect(p.dataDir.entries).toEqual(expect.arrayContaining(["engines", "jobs"]));
      expect(p.files).toEqual(
        secretFiles.map((file) => expect.objectContaining({ file, readable: true })),
      );
      expect(p.wroteEngineCache).toBe(true);
      // The agent's own environment is readable too, but the token was erased from it.
      const agentEnviron = p.environs.find((e) => e.pid === agent.child.pid);
      expect(agentEnviron?.program).toContain("outpost-agent");
      expect(agentEnviron?.tokens).toEqual([]);
      for (const environ of p.environs) {
        expect(environ.hashes).not.toContain(agentToken);
      }
    }
    expect(agent.output()).toMatch(/isolation[":= ]+none/);
    expect(await agentIsolation("probe-none")).toBe("none");
  });
});
