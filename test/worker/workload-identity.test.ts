/**
 * The coordinator as an OIDC issuer: the discovery document and JWKS, and the token each job of
 * a workspace with workload identity receives at lease time, verified with jose against the
 * published JWKS (fetched through the real routes), with the documented claims for plan, apply,
 * speculative and fork jobs; a key rotation keeps earlier tokens verifiable.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { JobAssignment } from "@outpost/protocol";
import { createLocalJWKSet, decodeProtectedHeader, type JWK, jwtVerify } from "jose";
import { describe, expect, it } from "vitest";
import { newApp } from "../../src/app.ts";
import { systemClock } from "../../src/deps.ts";
import { signToken } from "../../src/oidc/issuer.ts";
import { BASE, type ErrorBody, requestJson } from "./helpers/api.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { queueRun, runAction, runnableWorkspace, TestAgent } from "./helpers/runs.ts";
import { createHook, deliverGitHub, githubExample, type Json, randomSha } from "./helpers/vcs.ts";

const ISSUER = "https://outpost.test";

async function appFetch(path: string, bindings: Env): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await newApp(systemClock).fetch(new Request(`${BASE}${path}`), bindings, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

async function jwksOf(bindings: Env = env): Promise<{ keys: JWK[] }> {
  const res = await appFetch("/.well-known/jwks", bindings);
  expect(res.status).toBe(200);
  return res.json();
}

async function orgName(org: TestOrg): Promise<string> {
  const res = await requestJson<{ name: string }>("/api/v1/organization", {
    token: org.tokens.reader,
  });
  return res.body.name;
}

/** A runnable workspace with workload identity on, an agent, and its first plan job leased. */
async function identityJob(settings: Record<string, unknown> = {}, runBody: Json = {}) {
  const org = await seedOrg();
  const runnable = await runnableWorkspace(org, { workloadIdentity: true, ...settings });
  const agent = await TestAgent.register(runnable.agentToken);
  const queued = await queueRun(org, runnable.workspace.id, runBody);
  expect(queued.status, JSON.stringify(queued.body)).toBe(201);
  const job = await agent.lease();
  return { org, runnable, agent, job, runId: queued.body.id };
}

function tokenOf(job: JobAssignment): string {
  const identity = job.workloadIdentity;
  if (!identity || !("token" in identity)) {
    throw new Error(`expected a workload identity token, got ${JSON.stringify(identity)}`);
  }
  return identity.token;
}

async function verify(token: string, audience = ISSUER, bindings: Env = env) {
  const keys = createLocalJWKSet(await jwksOf(bindings));
  return jwtVerify(token, keys, { issuer: ISSUER, audience, algorithms: ["RS256"] });
}

describe("GET /.well-known/openid-configuration and /.well-known/jwks", () => {
  it("publish the issuer, its jwks_uri and every key of the ring as RS256 signing keys", async () => {
    const res = await requestJson<Record<string, unknown>>("/.well-known/openid-configuration");
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toContain("max-age");
    expect(res.body).toMatchObject({
      issuer: ISSUER,
      jwks_uri: `${ISSUER}/.well-known/jwks`,
      response_types_supported: ["id_token"],
      subject_types_supported: ["public"],
      id_token_signing_alg_values_supported: ["RS256"],
    });
    const jwks = await jwksOf();
    expect(jwks.keys).toEqual([
      { kty: "RSA", kid: "test1", alg: "RS256", use: "sig", n: expect.any(String), e: "AQAB" },
    ]);
    // 2048-bit modulus, and never a private part.
    expect(atob((jwks.keys[0]?.n ?? "").replaceAll("-", "+").replaceAll("_", "/")).length).toBe(
      256,
    );
    expect(JSON.stringify(jwks)).not.toMatch(/"(d|p|q|dp|dq|qi)"/);
  });

  it("answer 503 saying what to set when PUBLIC_URL or OIDC_SIGNING_KEYS is missing or bad", async () => {
    for (const [bindings, hint] of [
      [{ ...env, PUBLIC_URL: "" }, "PUBLIC_URL"],
      [{ ...env, OIDC_SIGNING_KEYS: "" }, "OIDC_SIGNING_KEYS"],
      [{ ...env, OIDC_SIGNING_KEYS: "k1:AAAA" }, "OIDC_SIGNING_KEYS"],
      [{ ...env, OIDC_SIGNING_KEYS: "no colon" }, "OIDC_SIGNING_KEYS"],
    ] as const) {
      const res = await appFetch("/.well-known/openid-configuration", bindings);
      expect(res.status).toBe(503);
      const body = (await res.json()) as ErrorBody;
      expect(body.error.message).toContain(hint);
    }
  });
});

describe("workload identity tokens of jobs", () => {
  it("a plan job carries a token that verifies against the JWKS with the documented claims", async () => {
    const { org, runnable, job, runId } = await identityJob();
    const token = tokenOf(job);
    expect(decodeProtectedHeader(token)).toEqual({ alg: "RS256", kid: "test1", typ: "JWT" });
    const { payload } = await verify(token);
    const name = await orgName(org);
    expect(payload).toMatchObject({
      iss: ISSUER,
      aud: ISSUER,
      sub: `organization:${name}:workspace:${runnable.workspace.name}:run_phase:plan`,
      outpost_organization_id: org.orgId,
      outpost_organization_name: name,
      outpost_workspace_id: runnable.workspace.id,
      outpost_workspace_name: runnable.workspace.name,
      outpost_run_id: runId,
      outpost_run_phase: "plan",
      outpost_run_operation: "apply",
      outpost_job_id: job.jobId,
      outpost_pool_id: runnable.poolId,
      outpost_engine: "terraform",
      outpost_engine_version: runnable.workspace.engineVersion,
      outpost_speculative: false,
      outpost_fork: false,
    });
    expect(payload.jti).toEqual(expect.any(String));
    const now = Date.now() / 1000;
    expect(payload.nbf).toBe(payload.iat);
    expect(Math.abs((payload.iat ?? 0) - now)).toBeLessThan(60);
    // The workspace's lifetime, 15 minutes by default (the agent renews it while the job runs).
    expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBe(900);
  });

  it("the apply job's token says run_phase apply and lives the workspace's lifetime", async () => {
    const { org, agent, job, runId } = await identityJob();
    await agent.start(job);
    const summary = { adds: 1, changes: 0, destroys: 0, imports: 0, hasChanges: true };
    expect((await agent.finish(job, { outcome: "succeeded", planSummary: summary })).status).toBe(
      200,
    );
    expect((await runAction(org, runId, "confirm")).status).toBe(200);
    const apply = await agent.lease();
    expect(apply.phase).toBe("apply");
    const { payload } = await verify(tokenOf(apply));
    expect(String(payload.sub)).toMatch(/:run_phase:apply$/);
    expect(payload).toMatchObject({ outpost_run_phase: "apply", outpost_job_id: apply.jobId });
    expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBe(900);
  });

  it("a speculative plan's token says so; a workspace's audience replaces the issuer URL", async () => {
    const { job } = await identityJob(
      { workloadIdentityAudience: "sts.amazonaws.com" },
      { isSpeculative: true },
    );
    const { payload } = await verify(tokenOf(job), "sts.amazonaws.com");
    expect(payload).toMatchObject({ aud: "sts.amazonaws.com", outpost_speculative: true });
    expect(String(payload.sub)).toMatch(/:run_phase:plan$/);
  });

  it("a workspace without workload identity hands its jobs none", async () => {
    const org = await seedOrg();
    const runnable = await runnableWorkspace(org);
    const agent = await TestAgent.register(runnable.agentToken);
    expect((await queueRun(org, runnable.workspace.id)).status).toBe(201);
    expect((await agent.lease()).workloadIdentity).toBeUndefined();
  });

  it("a deployment that cannot sign hands the job the reason instead of a token", async () => {
    const org = await seedOrg();
    const runnable = await runnableWorkspace(org, { workloadIdentity: true });
    const agent = await TestAgent.register(runnable.agentToken);
    expect((await queueRun(org, runnable.workspace.id)).status).toBe(201);
    const ctx = createExecutionContext();
    const res = await newApp(systemClock).fetch(
      new Request(`${BASE}/agent/v1/jobs/next?wait=0`, {
        method: "POST",
        headers: { authorization: `Bearer ${agent.token}`, "outpost-agent-id": agent.agentId },
      }),
      { ...env, PUBLIC_URL: "" },
      ctx,
    );
    await waitOnExecutionContext(ctx);
    const body = (await res.json()) as { job: JobAssignment };
    expect(body.job.workloadIdentity).toEqual({
      error: expect.stringContaining("PUBLIC_URL"),
    });
  });

  it("a key rotation keeps tokens signed before it verifiable, and new ones use the new key", async () => {
    const { job } = await identityJob();
    const before = tokenOf(job);
    // Step 1 publishes the next key after the signing one: it signs nothing yet.
    const published = {
      ...env,
      OIDC_SIGNING_KEYS: `${env.OIDC_SIGNING_KEYS},${env.TEST_NEXT_SIGNING_KEY}`,
    };
    expect((await jwksOf(published)).keys.map((k) => k.kid)).toEqual(["test1", "test2"]);
    const stillOld = await signToken(
      published,
      { sub: "s", aud: ISSUER },
      Date.now() + 60_000,
      Date.now(),
    );
    expect(stillOld.ok && decodeProtectedHeader(stillOld.value).kid).toBe("test1");
    // Step 2 signs with it while the old one stays published.
    const rotated = {
      ...env,
      OIDC_SIGNING_KEYS: `${env.TEST_NEXT_SIGNING_KEY},${env.OIDC_SIGNING_KEYS}`,
    };
    const jwks = await jwksOf(rotated);
    expect(jwks.keys.map((k) => k.kid)).toEqual(["test2", "test1"]);
    expect((await verify(before, ISSUER, rotated)).payload.outpost_job_id).toBe(job.jobId);
    const signed = await signToken(
      rotated,
      { sub: "s", aud: ISSUER },
      Date.now() + 60_000,
      Date.now(),
    );
    if (!signed.ok) {
      throw new Error(signed.reason);
    }
    expect(decodeProtectedHeader(signed.value).kid).toBe("test2");
    expect((await verify(signed.value, ISSUER, rotated)).payload.sub).toBe("s");
    // Once the old key is removed, what it signed no longer verifies.
    const retired = { ...env, OIDC_SIGNING_KEYS: env.TEST_NEXT_SIGNING_KEY };
    await expect(verify(before, ISSUER, retired)).rejects.toThrow();
  });
});

describe("pull requests", () => {
  async function pullRequestJob(headRepo: (repo: Json) => Json) {
    const org = await seedOrg();
    const hook = await createHook(org, "github");
    const runnable = await runnableWorkspace(org, {
      workloadIdentity: true,
      vcsRepoUrl: "https://github.com/Codertocat/Hello-World.git",
      forkPullRequests: "plan_without_secrets",
    });
    const agent = await TestAgent.register(runnable.agentToken);
    const p = githubExample("pull_request", (e) => e.action === "opened");
    const head = (p.pull_request as Json).head as Json;
    head.sha = randomSha();
    head.repo = headRepo(head.repo as Json);
    const delivered = await deliverGitHub(hook, "pull_request", p, { secret: hook.secret });
    expect(delivered.status).toBe(202);
    return agent.lease();
  }

  it("a pull request from the repository itself gets a token that says speculative, not fork", async () => {
    const job = await pullRequestJob((repo) => repo);
    expect(job.spec).toMatchObject({ isFork: false, isSpeculative: true });
    const { payload } = await verify(tokenOf(job));
    expect(payload).toMatchObject({ outpost_speculative: true, outpost_fork: false });
    expect(String(payload.sub)).toMatch(/:run_phase:plan$/);
  });

  it("a fork's plan job gets no workload identity token", async () => {
    const job = await pullRequestJob((repo) => ({ ...repo, id: 4242, fork: true }));
    expect(job.spec).toMatchObject({ isFork: true, isSpeculative: true });
    expect(job.workloadIdentity).toBeUndefined();
  });
});
