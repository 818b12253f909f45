/**
 * Shared pieces of the least-privilege tests: jobs leased and started through the real agent
 * routes (so their run tokens are the real ones), a producer workspace with resources and
 * outputs, and the requests an attacker holding a run token would send.
 */
import type { JobAssignment } from "@outpost/protocol";
import { expect } from "vitest";
import { type ErrorBody, request, requestJson } from "../../worker/helpers/api.ts";
import type { TestOrg } from "../../worker/helpers/fixtures.ts";
import {
  queueRun,
  type RunBody,
  type Runnable,
  runnableWorkspace,
  TestAgent,
} from "../../worker/helpers/runs.ts";
import { BackendClient, stateJson } from "../../worker/helpers/state-fixtures.ts";
import { createWorkspace } from "../../worker/helpers/workspaces.ts";

export const encode = (text: string) => new TextEncoder().encode(text);

export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
}

export const jobUrl = (job: JobAssignment, rest: string) =>
  `/agent/v1/jobs/${encodeURIComponent(job.jobId)}${rest}`;

/** A workspace whose runs can be planned and applied, with one agent registered on its pool. */
export async function runnableWithAgent(org: TestOrg, settings: Record<string, unknown> = {}) {
  const runnable = await runnableWorkspace(org, settings);
  const agent = await TestAgent.register(runnable.agentToken);
  return { ...runnable, agent };
}

export type StartedJob = { run: RunBody; job: JobAssignment };

/** Queues a run on the workspace, then leases and starts its plan job through the agent routes. */
export async function startedPlan(
  org: TestOrg,
  target: Runnable & { agent: TestAgent },
  body: Record<string, unknown> = {},
): Promise<StartedJob> {
  const run = await queueRun(org, target.workspace.id, body);
  expect(run.status, JSON.stringify(run.body)).toBe(201);
  const job = await target.agent.lease();
  expect(job.runId).toBe(run.body.id);
  await target.agent.start(job);
  return { run: run.body, job };
}

/** Uploads a plan artefact with the run token, as the agent does (with its SHA-256). */
export async function putArtifact(
  job: JobAssignment,
  name: string,
  bytes: Uint8Array,
  token = job.runToken ?? "",
  sha256?: string,
) {
  return requestJson<{ sizeBytes: number; sha256: string } & ErrorBody>(
    jobUrl(job, `/artifacts/${name}`),
    {
      method: "PUT",
      token,
      body: bytes,
      headers: {
        "content-type": "application/octet-stream",
        "outpost-sha256": sha256 ?? (await sha256Hex(bytes)),
      },
    },
  );
}

/** Finishes a plan job as succeeded with changes, after uploading its plan file. */
export async function finishPlan(
  agent: TestAgent,
  job: JobAssignment,
  plan = encode(`plan of ${job.runId}`),
) {
  expect((await putArtifact(job, "plan.tfplan", plan)).status).toBe(200);
  const res = await agent.finish(job, {
    outcome: "succeeded",
    planSummary: { adds: 1, changes: 0, destroys: 0, imports: 0, hasChanges: true },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return plan;
}

export const PRODUCER_SECRET = "producer-db-password-9f8e7d";
export const PRODUCER_RESOURCE_SECRET = "resource-attribute-private-key-0a1b2c";

/**
 * A local-mode workspace of the org holding a state with a resource (whose attributes must
 * never reach another workspace) and two outputs, one sensitive.
 */
export async function producerWithState(org: TestOrg, name?: string) {
  const ws = await createWorkspace(org, name ? { name } : {});
  const body = stateJson({
    serial: 3,
    lineage: "producer-lineage",
    outputs: {
      vpc_id: { value: "vpc-0123", type: "string" },
      db_password: { value: PRODUCER_SECRET, type: "string", sensitive: true },
    },
    resources: [
      {
        mode: "managed",
        type: "tls_private_key",
        name: "k",
        provider: 'provider["registry.terraform.io/hashicorp/tls"]',
        instances: [{ attributes: { private_key_pem: PRODUCER_RESOURCE_SECRET } }],
      },
    ],
  });
  const put = await new BackendClient(ws.id, org.tokens.member).put(body);
  expect(put.status, await put.clone().text()).toBe(200);
  return ws;
}

/** Sets a workspace's remote state sharing through the API (admin). */
export async function shareState(
  org: TestOrg,
  workspaceId: string,
  remoteStateSharing: "none" | "organization" | "workspaces",
  remoteStateConsumerIds?: string[],
) {
  return requestJson<Record<string, unknown> & ErrorBody>(`/api/v1/workspaces/${workspaceId}`, {
    method: "PATCH",
    token: org.tokens.admin,
    body: {
      remoteStateSharing,
      ...(remoteStateConsumerIds ? { remoteStateConsumerIds } : {}),
    },
  });
}

/** A state document as the http backend answers it, or the status when it answers none. */
export async function readBackend(workspaceId: string, token: string) {
  const res = await new BackendClient(workspaceId, token).get();
  const text = await res.text();
  return { status: res.status, text, json: res.status === 200 ? JSON.parse(text) : null };
}

/** GET with a bearer token; the status only. */
export async function statusOf(path: string, token: string, method = "GET"): Promise<number> {
  const res = await request(path, { method, token });
  await res.arrayBuffer();
  return res.status;
}
