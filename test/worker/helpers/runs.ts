/**
 * Runs in tests: a workspace that can run (pool, agent token, configuration), and an agent that
 * speaks the real protocol over HTTP, so every run moves through the real routes, the real pool
 * object and the real hooks.
 */

import type { JobAssignment, JobsNextResponse } from "@outpost/protocol";
import { expect } from "vitest";
import { type ErrorBody, requestJson } from "./api.ts";
import { upload } from "./configuration-versions.ts";
import type { TestOrg } from "./fixtures.ts";
import { jobPath, registerAgent, seedPool } from "./pools.ts";
import { gzip, tar } from "./tarball.ts";
import { createWorkspace, type WorkspaceBody } from "./workspaces.ts";

export type RunBody = {
  id: string;
  workspaceId: string;
  status: string;
  statusReason: string | null;
  waitingReason: string | null;
  operation: string;
  isSpeculative: boolean;
  planSummary: Record<string, unknown> | null;
  statusTimestamps: Record<string, string>;
  vcs: Record<string, unknown>;
  [field: string]: unknown;
};

export type Runnable = {
  workspace: WorkspaceBody;
  poolId: string;
  agentToken: string;
  agentTokenId: string;
  configurationVersionId: string;
};

/** A workspace in agent mode on a fresh pool with one uploaded configuration. */
export async function runnableWorkspace(
  org: TestOrg,
  settings: Record<string, unknown> = {},
): Promise<Runnable> {
  const pool = await seedPool(org);
  const workspace = await createWorkspace(org, {
    executionMode: "agent",
    poolId: pool.poolId,
    ...settings,
  });
  // The configuration sits in the workspace's working directory, as the upload rule requires.
  const dir =
    typeof settings.workingDirectory === "string" && settings.workingDirectory !== ""
      ? `${settings.workingDirectory}/`
      : "";
  const file =
    settings.engine === "pulumi"
      ? { name: `${dir}Pulumi.yaml`, body: "name: demo\nruntime: nodejs\n" }
      : { name: `${dir}main.tf`, body: 'resource "null_resource" "x" {}\n' };
  const body = await gzip(tar([file]));
  const cv = await upload(org, workspace.id, body);
  expect(cv.status, JSON.stringify(cv.body)).toBe(201);
  return {
    workspace,
    poolId: pool.poolId,
    agentToken: pool.token,
    agentTokenId: pool.tokenId,
    configurationVersionId: cv.body.id,
  };
}

/** Queues a run as the org's member. */
export async function queueRun(
  org: TestOrg,
  workspaceId: string,
  body: Record<string, unknown> = {},
) {
  const res = await requestJson<RunBody & ErrorBody>(`/api/v1/workspaces/${workspaceId}/runs`, {
    method: "POST",
    token: org.tokens.member,
    body,
  });
  return res;
}

export async function getRun(org: TestOrg, runId: string): Promise<RunBody> {
  const res = await requestJson<RunBody>(`/api/v1/runs/${runId}`, { token: org.tokens.reader });
  expect(res.status).toBe(200);
  return res.body;
}

export async function runAction(
  org: TestOrg,
  runId: string,
  action: string,
  token = org.tokens.member,
) {
  return requestJson<RunBody & ErrorBody>(`/api/v1/runs/${runId}/${action}`, {
    method: "POST",
    token,
  });
}

/** An agent speaking the protocol over HTTP. */
export class TestAgent {
  readonly token: string;
  agentId = "";

  constructor(token: string) {
    this.token = token;
  }

  static async register(token: string, options: Parameters<typeof registerAgent>[1] = {}) {
    const agent = new TestAgent(token);
    agent.agentId = await registerAgent(token, options);
    return agent;
  }

  private headers() {
    return { "outpost-agent-id": this.agentId };
  }

  /** Leases the next job, failing the test if there is none. */
  async lease(): Promise<JobAssignment> {
    const res = await requestJson<JobsNextResponse>("/agent/v1/jobs/next?wait=0", {
      method: "POST",
      token: this.token,
      headers: this.headers(),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    if (res.body.action !== "run") {
      throw new Error(`expected a job, got ${JSON.stringify(res.body)}`);
    }
    return res.body.job;
  }

  async start(job: JobAssignment) {
    const res = await requestJson(jobPath(job.jobId, job.leaseId, "start"), {
      method: "POST",
      token: this.token,
      headers: this.headers(),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }

  async finish(job: JobAssignment, body: Record<string, unknown>) {
    return requestJson(jobPath(job.jobId, job.leaseId, "finish"), {
      method: "POST",
      token: this.token,
      headers: this.headers(),
      body: { exitCode: 0, ...body },
    });
  }

  async heartbeat(jobs: JobAssignment[]) {
    return requestJson<{ cancel: { jobId: string; mode: string }[]; exit: unknown }>(
      "/agent/v1/heartbeat",
      {
        method: "POST",
        token: this.token,
        headers: this.headers(),
        body: { running: jobs.map((j) => ({ jobId: j.jobId, leaseId: j.leaseId })) },
      },
    );
  }

  /** Leases, starts and finishes a plan with the given changes. */
  async plan(hasChanges: boolean): Promise<JobAssignment> {
    const job = await this.lease();
    expect(job.phase).toBe("plan");
    await this.start(job);
    const summary = { adds: hasChanges ? 1 : 0, changes: 0, destroys: 0, imports: 0, hasChanges };
    const res = await this.finish(job, { outcome: "succeeded", planSummary: summary });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return job;
  }

  async apply(): Promise<JobAssignment> {
    const job = await this.lease();
    expect(job.phase).toBe("apply");
    await this.start(job);
    const res = await this.finish(job, { outcome: "succeeded" });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return job;
  }
}
