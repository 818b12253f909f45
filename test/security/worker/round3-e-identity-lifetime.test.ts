/**
 * Round three, must-be-true 1: a job's workload identity token (which workspace code can read,
 * and which leaked through a log printed reversed) lived until the phase's timeout, 2 h after a
 * plan and 24 h after an apply. Now it lives the workspace's `workloadIdentityTokenLifetimeSeconds`
 * (15 minutes by default) and the job's run token renews it only while the job runs, so a copy
 * is worthless soon after the job ends.
 */
import type { JobAssignment } from "@outpost/protocol";
import { createLocalJWKSet, decodeJwt, type JWK, jwtVerify } from "jose";
import { describe, expect, inject, it, vi } from "vitest";
import { type ErrorBody, requestJson } from "../../worker/helpers/api.ts";
import { seedOrg, type TestOrg } from "../../worker/helpers/fixtures.ts";
import { queueRun, runnableWorkspace, TestAgent } from "../../worker/helpers/runs.ts";
import { finishPlan } from "./helpers.ts";
import { deploymentWith } from "./round3.ts";

vi.setConfig({ testTimeout: 30_000 });

const ISSUER = inject("oidcIssuerUrl");
const deployment = deploymentWith({ PUBLIC_URL: ISSUER });

/** A started plan job of a workspace with workload identity on, and its token. */
async function identityJob(org: TestOrg, settings: Record<string, unknown> = {}) {
  const runnable = await runnableWorkspace(org, { workloadIdentity: true, ...settings });
  const agent = await TestAgent.register(runnable.agentToken);
  const queued = await queueRun(org, runnable.workspace.id);
  expect(queued.status, JSON.stringify(queued.body)).toBe(201);
  const job = await agent.lease();
  await agent.start(job);
  const identity = job.workloadIdentity;
  if (!identity || !("token" in identity)) {
    throw new Error(`no workload identity token: ${JSON.stringify(identity)}`);
  }
  return { runnable, agent, job, token: identity.token };
}

function renew(job: JobAssignment) {
  return requestJson<{ token: string; expiresAt: string } & ErrorBody>(
    `/agent/v1/jobs/${encodeURIComponent(job.jobId)}/workload-identity`,
    { method: "POST", token: job.runToken ?? "" },
  );
}

describe("a workload identity token taken from a job", () => {
  it("lives 15 minutes by default, and only as long as the workspace says", async () => {
    const org = await seedOrg();
    const plain = decodeJwt((await identityJob(org)).token);
    expect((plain.exp ?? 0) - (plain.iat ?? 0)).toBe(900);
    const short = await identityJob(org, { workloadIdentityTokenLifetimeSeconds: 60 });
    const claims = decodeJwt(short.token);
    expect((claims.exp ?? 0) - (claims.iat ?? 0)).toBe(60);
  });

  it("is worthless soon after its job ends: no renewal, and it expires within its lifetime", async () => {
    const org = await seedOrg();
    const { agent, job, token } = await identityJob(org, {
      workloadIdentityTokenLifetimeSeconds: 60,
    });
    // While the job runs, its run token renews the identity: a new token, the same claims.
    const renewed = await renew(job);
    expect(renewed.status, JSON.stringify(renewed.body)).toBe(200);
    const [before, after] = [decodeJwt(token), decodeJwt(renewed.body.token)];
    expect(after.jti).not.toBe(before.jti);
    expect(after.sub).toBe(before.sub);
    expect(after.outpost_job_id).toBe(job.jobId);

    await finishPlan(agent, job);
    const refused = await renew(job);
    expect(refused.status, JSON.stringify(refused.body)).toBe(401);

    const jwks = await requestJson<{ keys: JWK[] }>("/.well-known/jwks");
    const keys = createLocalJWKSet(jwks.body);
    const at = (ms: number) => ({ issuer: ISSUER, currentDate: new Date(ms) });
    await expect(jwtVerify(token, keys, at(deployment.now()))).resolves.toBeDefined();
    // A cloud allows some skew; a minute past its lifetime no verifier accepts it.
    deployment.advance(120_000);
    await expect(jwtVerify(token, keys, at(deployment.now()))).rejects.toThrow(/exp/);
    await expect(jwtVerify(renewed.body.token, keys, at(deployment.now()))).rejects.toThrow(/exp/);
  });

  it("is not issued by renewal to a job whose workspace has none: 409, a sentence", async () => {
    const org = await seedOrg();
    const runnable = await runnableWorkspace(org);
    const agent = await TestAgent.register(runnable.agentToken);
    expect((await queueRun(org, runnable.workspace.id)).status).toBe(201);
    const job = await agent.lease();
    await agent.start(job);
    expect(job.workloadIdentity ?? null).toBeNull();
    const refused = await renew(job);
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body.error.message).toBe(
      `job ${job.jobId} has no workload identity: its workspace has none, or it plans a fork's change`,
    );
  });
});
