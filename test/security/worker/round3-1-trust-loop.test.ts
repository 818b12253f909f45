/**
 * Round three, finding 1: a pool trust could name the coordinator's own issuer, and a job's
 * workload identity token (which workspace code can read) was then exchanged for an agent token
 * that receives every job of the pool, also another organization's pool. Reproduced on a
 * deployment whose `PUBLIC_URL` is the loopback issuer host's origin, which serves the
 * coordinator's own keys, so the loop would close as it did when probed. Also: a token of any
 * other Outpost (it carries `outpost_organization_id`) is refused.
 */
import { newId } from "@outpost/common";
import { decodeJwt, type JWK } from "jose";
import { beforeAll, describe, expect, inject, it, vi } from "vitest";
import { oidcTrusts } from "../../../src/db/schema.ts";
import { type ErrorBody, requestJson } from "../../worker/helpers/api.ts";
import { db, seedOrg, type TestOrg } from "../../worker/helpers/fixtures.ts";
import { addTrust, exchange, TestIssuer } from "../../worker/helpers/oidc.ts";
import { seedPool } from "../../worker/helpers/pools.ts";
import { queueRun, runnableWorkspace, TestAgent } from "../../worker/helpers/runs.ts";
import { deploymentWith, expectRejected, refusalInAudit } from "./round3.ts";

vi.setConfig({ testTimeout: 30_000 });

/** The loopback issuer host's origin: this deployment's `PUBLIC_URL`, so its issuer URL. */
const ISSUER = inject("oidcIssuerUrl");

beforeAll(async () => {
  // The coordinator's published keys, served at the issuer's origin as the deployment would.
  const jwks = await requestJson<{ keys: JWK[] }>("/.well-known/jwks");
  const res = await fetch(`${ISSUER}/_root/jwks`, {
    method: "PUT",
    body: JSON.stringify({ keys: jwks.body.keys }),
  });
  expect(res.status).toBe(204);
});

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

/** A trust as one stored before trusts of the own issuer were refused. */
async function storedTrust(org: TestOrg, poolId: string, issuer: string) {
  const id = newId("oidcTrust");
  await db.insert(oidcTrusts).values({
    id,
    orgId: org.orgId,
    poolId,
    issuer,
    audience: issuer,
    claims: { sub: "organization:*" },
    createdBy: org.ownerTokenId,
    createdAt: Date.now(),
  });
  return id;
}

describe("a trust naming this deployment's own issuer", () => {
  deploymentWith({ PUBLIC_URL: ISSUER });

  it("cannot be created, however the URL is written", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const host = new URL(ISSUER).host;
    for (const issuer of [ISSUER, `${ISSUER}/`, `${ISSUER}/workloads`, `http://${host}/x/`]) {
      const res = await requestJson<ErrorBody>(`/api/v1/pools/${pool.poolId}/oidc-trusts`, {
        method: "POST",
        token: org.ownerToken,
        body: { issuer, audience: ISSUER, claims: { sub: "organization:*" } },
      });
      expect(res.status, `${issuer}: ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.error.message).toContain("this deployment's own issuer");
    }
  });

  it("accepts no workload identity token, from its own organization or another, even when stored before", async () => {
    const victim = await seedOrg();
    const { runnable, token } = await identityJob(victim);
    expect(decodeJwt(token).iss).toBe(ISSUER);
    const attacker = await seedOrg();
    const theirs = await seedPool(attacker);
    await storedTrust(attacker, theirs.poolId, ISSUER);
    await storedTrust(victim, runnable.poolId, ISSUER);

    const across = expectRejected(await exchange(theirs.poolId, token));
    expect(await refusalInAudit(attacker, theirs.poolId, across)).toMatchObject({
      reason: "workload_identity_token",
      message: expect.stringContaining("another organization"),
    });
    const within = expectRejected(await exchange(runnable.poolId, token));
    expect((await refusalInAudit(victim, runnable.poolId, within)).reason).toBe(
      "workload_identity_token",
    );
  });
});

describe("a token of another Outpost, on this deployment's usual PUBLIC_URL", () => {
  it("is refused too: anything carrying outpost_organization_id", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const other = await TestIssuer.create("other-outpost");
    await addTrust(org, pool.poolId, {
      issuer: other.url,
      audience: other.url,
      claims: { sub: "organization:*" },
    });
    const token = await other.sign({
      aud: other.url,
      sub: "organization:acme:workspace:prod:run_phase:apply",
      outpost_organization_id: org.orgId,
      outpost_workspace_id: "ws_x",
    });
    const requestId = expectRejected(await exchange(pool.poolId, token));
    expect((await refusalInAudit(org, pool.poolId, requestId)).reason).toBe(
      "workload_identity_token",
    );
  });
});
