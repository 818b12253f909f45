import { env } from "cloudflare:workers";
import type { JobAssignment } from "@outpost/protocol";
import { describe, expect, it } from "vitest";
import { logKey } from "../../src/runs/blobs.ts";
import { type ErrorBody, request, requestJson } from "./helpers/api.ts";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { getRun, queueRun, runAction, runnableWorkspace, TestAgent } from "./helpers/runs.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const sha256 = async (bytes: Uint8Array) =>
  [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))]
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("");
const jobUrl = (job: JobAssignment, rest: string) =>
  `/agent/v1/jobs/${encodeURIComponent(job.jobId)}${rest}`;
const logUrl = (job: JobAssignment, offset: number) =>
  jobUrl(job, `/leases/${job.leaseId}/logs?offset=${offset}`);

function putLog(job: JobAssignment, offset: number, text: string, token = job.runToken ?? "") {
  return requestJson<{ received: number } & ErrorBody>(logUrl(job, offset), {
    method: "PUT",
    token,
    body: enc(text),
    headers: { "content-type": "application/octet-stream" },
  });
}

async function startedPlan(org: TestOrg) {
  const runnable = await runnableWorkspace(org);
  const agent = await TestAgent.register(runnable.agentToken);
  const run = await queueRun(org, runnable.workspace.id);
  const job = await agent.lease();
  await agent.start(job);
  return { ...runnable, agent, run: run.body, job };
}

describe("job logs", () => {
  it("appends at offsets, answers gaps with 416 and the length held, and serves readers live and after", async () => {
    const org = await seedOrg();
    const { agent, run, job } = await startedPlan(org);
    expect((await putLog(job, 0, "Initializing...\n")).body).toEqual({ received: 16 });
    expect((await putLog(job, 0, "Initializing...\n")).status).toBe(200);
    const gap = await putLog(job, 100, "x");
    expect(gap.status).toBe(416);
    expect(gap.body.error.code).toBe("RANGE_NOT_SATISFIABLE");
    expect(gap.headers.get("outpost-log-length")).toBe("16");
    await putLog(job, 16, "Plan: 1 to add\n");

    const live = await request(`/api/v1/runs/${run.id}/logs?phase=plan&offset=0`, {
      token: org.tokens.reader,
    });
    expect(await live.text()).toBe("Initializing...\nPlan: 1 to add\n");
    expect(live.headers.get("outpost-log-next-offset")).toBe("31");
    expect(live.headers.get("outpost-log-complete")).toBe("false");
    const tail = await request(`/api/v1/runs/${run.id}/logs?phase=plan&offset=16`, {
      token: org.tokens.reader,
    });
    expect(await tail.text()).toBe("Plan: 1 to add\n");

    await agent.finish(job, {
      outcome: "succeeded",
      planSummary: { adds: 1, changes: 0, destroys: 0, hasChanges: true },
    });
    const after = await request(`/api/v1/runs/${run.id}/logs?phase=plan&offset=0`, {
      token: org.tokens.reader,
    });
    expect(await after.text()).toBe("Initializing...\nPlan: 1 to add\n");
    expect(after.headers.get("outpost-log-complete")).toBe("true");
    // The run still waits for confirmation, but the job has ended: so has its token.
    const late = await putLog(job, 31, "late");
    expect(late.status).toBe(401);
    expect(late.body.error.code).toBe("TOKEN_REVOKED");
  });

  it("refuses a stale lease (409 LEASE_LOST), chunks over 1 MiB (413) and bad offsets (400)", async () => {
    const org = await seedOrg();
    const { job } = await startedPlan(org);
    const stale = await requestJson<ErrorBody>(
      jobUrl(job, `/leases/lease_${"a".repeat(26)}/logs?offset=0`),
      {
        method: "PUT",
        token: job.runToken ?? "",
        body: enc("x"),
        headers: { "content-type": "application/octet-stream" },
      },
    );
    expect(stale.status).toBe(409);
    expect(stale.body.error.code).toBe("LEASE_LOST");
    const big = await putLog(job, 0, "x".repeat(1024 * 1024 + 1));
    expect(big.status).toBe(413);
    for (const offset of ["-1", "abc", "1.5"]) {
      const bad = await requestJson<ErrorBody>(
        jobUrl(job, `/leases/${job.leaseId}/logs?offset=${offset}`),
        {
          method: "PUT",
          token: job.runToken ?? "",
          body: enc("x"),
          headers: { "content-type": "application/octet-stream" },
        },
      );
      expect(bad.status, offset).toBe(400);
    }
  });
});

describe("configuration and plan artefacts", () => {
  it("gives the job its configuration, and the apply exactly the plan the plan job uploaded", async () => {
    const org = await seedOrg();
    const { agent, run, job } = await startedPlan(org);
    const config = await request(jobUrl(job, "/configuration"), { token: job.runToken ?? "" });
    expect(config.status).toBe(200);
    const bytes = new Uint8Array(await config.arrayBuffer());
    const digest = [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))]
      .map((b) => b.toString(16).padStart(2, "0"))
      .join("");
    expect(config.headers.get("outpost-sha256")).toBe(digest);

    const plan = enc("binary plan file \u0000\u0001");
    const put = await requestJson(jobUrl(job, "/artifacts/plan.tfplan"), {
      method: "PUT",
      token: job.runToken ?? "",
      body: plan,
      headers: { "content-type": "application/octet-stream", "outpost-sha256": await sha256(plan) },
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    const unknown = await requestJson<ErrorBody>(jobUrl(job, "/artifacts/secrets.txt"), {
      method: "PUT",
      token: job.runToken ?? "",
      body: plan,
      headers: { "outpost-sha256": await sha256(plan) },
    });
    expect(unknown.status).toBe(400);
    await agent.finish(job, {
      outcome: "succeeded",
      planSummary: { adds: 1, changes: 0, destroys: 0, hasChanges: true },
    });
    await runAction(org, run.id, "confirm");
    const apply = await agent.lease();
    await agent.start(apply);
    const got = await request(jobUrl(apply, "/artifacts/plan.tfplan"), {
      token: apply.runToken ?? "",
    });
    expect(new Uint8Array(await got.arrayBuffer())).toEqual(plan);
    const refused = await requestJson<ErrorBody>(jobUrl(apply, "/artifacts/plan.tfplan"), {
      method: "PUT",
      token: apply.runToken ?? "",
      body: enc("other plan"),
      headers: { "outpost-sha256": await sha256(enc("other plan")) },
    });
    expect(refused.status).toBe(409);
    await agent.finish(apply, { outcome: "succeeded" });
    expect((await getRun(org, run.id)).status).toBe("applied");
  });

  it("scopes a run token to its own job and run; another run's ids answer 404", async () => {
    const org = await seedOrg();
    const one = await startedPlan(org);
    const two = await startedPlan(org);
    const foreign = [
      { method: "GET", path: jobUrl(two.job, "/configuration") },
      { method: "GET", path: jobUrl(two.job, "/artifacts/plan.tfplan") },
      { method: "PUT", path: logUrl(two.job, 0) },
    ];
    for (const target of foreign) {
      const res = await requestJson<ErrorBody>(target.path, {
        method: target.method,
        token: one.job.runToken ?? "",
        ...(target.method === "PUT"
          ? { body: enc("x"), headers: { "content-type": "application/octet-stream" } }
          : {}),
      });
      expect(res.status, target.path).toBe(404);
    }
    // A run token is not an org token, nor an agent token.
    expect((await request("/api/v1/workspaces", { token: one.job.runToken ?? "" })).status).toBe(
      401,
    );
    expect(
      (
        await request("/agent/v1/heartbeat", {
          method: "POST",
          token: one.job.runToken ?? "",
          body: { running: [] },
        })
      ).status,
    ).toBe(401);
    // The other org's run token sees nothing of this org.
    const otherOrg = await seedOrg();
    const three = await startedPlan(otherOrg);
    const cross = await request(jobUrl(one.job, "/configuration"), {
      token: three.job.runToken ?? "",
    });
    expect(cross.status).toBe(404);
    // Once the run is terminal, its token is dead.
    await runAction(org, one.run.id, "cancel");
    await one.agent.finish(one.job, { outcome: "canceled", exitCode: 130 });
    const dead = await requestJson<ErrorBody>(jobUrl(one.job, "/configuration"), {
      token: one.job.runToken ?? "",
    });
    expect(dead.status).toBe(401);
    expect(dead.body.error.code).toBe("TOKEN_REVOKED");
  });
});

// The auth matrix for run-token routes: revoked = a token of a run that ended; other org = a live
// run token of another organization.
async function runTokens(org: TestOrg) {
  const ended = await startedPlan(org);
  await runAction(org, ended.run.id, "cancel");
  await ended.agent.finish(ended.job, { outcome: "canceled", exitCode: 130 });
  const other = await startedPlan(await seedOrg());
  return { revoked: ended.job.runToken ?? "", otherOrg: other.job.runToken ?? "" };
}

describeAuth("PUT /agent/v1/jobs/:jobId/leases/:leaseId/logs", {
  role: null,
  tokens: runTokens,
  target: async (org) => {
    const { job } = await startedPlan(org);
    return {
      method: "PUT",
      path: logUrl(job, 0),
      body: enc("x"),
      headers: { "content-type": "application/octet-stream" },
    };
  },
});
describeAuth("GET /agent/v1/jobs/:jobId/configuration", {
  role: null,
  tokens: runTokens,
  target: async (org) => ({
    method: "GET",
    path: jobUrl((await startedPlan(org)).job, "/configuration"),
  }),
});
describeAuth("PUT /agent/v1/jobs/:jobId/artifacts/:name", {
  role: null,
  tokens: runTokens,
  target: async (org) => ({
    method: "PUT",
    path: jobUrl((await startedPlan(org)).job, "/artifacts/plan.json"),
    body: enc("{}"),
    headers: {
      "content-type": "application/octet-stream",
      "outpost-sha256": await sha256(enc("{}")),
    },
  }),
});
describeAuth("GET /agent/v1/jobs/:jobId/artifacts/:name", {
  role: null,
  tokens: runTokens,
  target: async (org) => ({
    method: "GET",
    path: jobUrl((await startedPlan(org)).job, "/artifacts/plan.json"),
  }),
});

describe("R2 holds the finished log", () => {
  it("writes the whole phase log as one object when the job ends", async () => {
    const org = await seedOrg();
    const { agent, run, job } = await startedPlan(org);
    await putLog(job, 0, "all of it\n");
    await agent.finish(job, { outcome: "failed", exitCode: 1 });
    const object = await env.BLOBS.get(
      logKey({ orgId: org.orgId, workspaceId: run.workspaceId, runId: run.id }, "plan"),
    );
    expect(await object?.text()).toBe("all of it\n");
  });
});
