/**
 * Agent pools in tests: pools and agent tokens through the real services, agents registered
 * through the real HTTP routes, jobs queued through the real Durable Object, and time made to
 * pass by moving the pool's injected clock forward (never by sleeping, never by rewriting rows).
 */
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { newId } from "@outpost/common";
import type { AgentPool } from "../../../durable/agent-pool.ts";
import type { QueuedJob } from "../../../durable/pool-types.ts";
import {
  createAgentToken,
  createPool,
  poolStub,
  revokeAgentToken,
} from "../../../src/pools/service.ts";
import { requestJson } from "./api.ts";
import { deps, type TestOrg, tokenActor } from "./fixtures.ts";

let counter = 0;

/** A new pool in the org, with one active agent token. */
export async function seedPool(
  org: TestOrg,
  settings: {
    unknownAfterSeconds?: number;
    erroredAfterSeconds?: number;
    retentionSeconds?: number;
  } = {},
): Promise<{ poolId: string; token: string; tokenId: string }> {
  const pool = await createPool(deps, {
    orgId: org.orgId,
    actor: tokenActor(org.ownerTokenId),
    name: `pool-${counter++}-${Date.now().toString(36)}`,
    ...settings,
  });
  if (!pool.ok) {
    throw new Error(`seedPool: ${pool.reason.message}`);
  }
  const token = await addAgentToken(org, pool.value.id);
  return { poolId: pool.value.id, ...token };
}

export async function addAgentToken(org: TestOrg, poolId: string) {
  const created = await createAgentToken(deps, {
    orgId: org.orgId,
    poolId,
    description: "test agents",
    actor: tokenActor(org.ownerTokenId),
  });
  if (!created.ok) {
    throw new Error(`addAgentToken: ${created.reason.message}`);
  }
  return { token: created.value.token, tokenId: created.value.id };
}

/** An agent token of the pool that has been revoked. */
export async function revokedAgentToken(org: TestOrg, poolId: string): Promise<string> {
  const { token, tokenId } = await addAgentToken(org, poolId);
  const revoked = await revokeAgentToken(deps, {
    orgId: org.orgId,
    poolId,
    id: tokenId,
    actor: tokenActor(org.ownerTokenId),
  });
  if (!revoked.ok) {
    throw new Error(`revokedAgentToken: ${revoked.reason.message}`);
  }
  return token;
}

export type AgentOptions = {
  capacity?: number;
  acceptedPhases?: ("plan" | "apply")[];
  name?: string;
  isolation?: "bwrap" | "none";
  predecessorAgentId?: string;
  engines?: { engine: string; version: string; source: string }[];
};

/** Registers an agent through `POST /agent/v1/register`; returns its id. */
export async function registerAgent(token: string, options: AgentOptions = {}): Promise<string> {
  const res = await requestJson<{ agentId: string }>("/agent/v1/register", {
    method: "POST",
    token,
    body: { version: "0.1.0", os: "linux", arch: "amd64", ...options },
  });
  if (res.status !== 201) {
    throw new Error(`registerAgent: ${res.status} ${JSON.stringify(res.body)}`);
  }
  return res.body.agentId;
}

/** A valid job for the queue; `runId` is fresh unless given. */
export function makeJob(
  workspaceId: string,
  options: {
    phase?: "plan" | "apply";
    speculative?: boolean;
    runId?: string;
    orgId?: string;
    timeoutMs?: number;
  } = {},
): QueuedJob {
  const phase = options.phase ?? "plan";
  const runId = options.runId ?? newId("run");
  return {
    jobId: `${runId}:${phase}`,
    runId,
    workspaceId,
    orgId: options.orgId ?? "org_test",
    phase,
    priorityClass: phase === "apply" ? 0 : options.speculative ? 2 : 1,
    spec: {
      operation: phase,
      phase,
      isSpeculative: options.speculative ?? false,
      isDestroy: false,
      targetAddrs: [],
      replaceAddrs: [],
      refresh: true,
      workspaceName: workspaceId,
      engine: "terraform",
      engineVersion: "1.9.8",
      stackName: null,
      workingDirectory: "",
      configuration: null,
      isFork: false,
      planSha256: null,
    },
    timeoutMs: options.timeoutMs ?? (phase === "apply" ? 86_400_000 : 7_200_000),
  };
}

/** Queues a job and fails the test if the pool refuses it. */
export async function enqueue(poolId: string, job: QueuedJob) {
  const result = await poolStub(env, poolId).enqueue(job);
  if (!result.ok) {
    throw new Error(`enqueue: ${result.reason}`);
  }
  return result.value;
}

/** How far each pool's clock has been moved in this test file. */
const clockOffsets = new Map<string, number>();

/**
 * Makes `ms` pass for the pool: its injected clock (`AgentPool.now`) moves forward by `ms` and
 * stays there. Fire the alarm afterwards (`runDurableObjectAlarm`) to let it act on the time.
 */
export async function advancePoolClock(poolId: string, ms: number): Promise<void> {
  const total = (clockOffsets.get(poolId) ?? 0) + ms;
  clockOffsets.set(poolId, total);
  await setPoolClock(poolId, total);
}

/** Evicts the pool's object, as the runtime may at any time; the new instance keeps the test's time. */
export async function evictPool(poolId: string): Promise<void> {
  await evictDurableObject(poolStub(env, poolId));
  await setPoolClock(poolId, clockOffsets.get(poolId) ?? 0);
}

async function setPoolClock(poolId: string, offsetMs: number): Promise<void> {
  await runInDurableObject(poolStub(env, poolId), (instance: AgentPool) => {
    instance.now = () => Date.now() + offsetMs;
  });
}

/** The job path segment: the colon percent-encoded, as agents send it. */
export function jobPath(jobId: string, leaseId: string, action: "start" | "finish"): string {
  return `/agent/v1/jobs/${encodeURIComponent(jobId)}/leases/${leaseId}/${action}`;
}
