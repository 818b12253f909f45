/**
 * `POST /agent/v1/oidc/exchange` against loopback issuers (discovery and JWKS served from
 * 127.0.0.1, tokens signed with jose in workerd): the happy path, one refusal per check (each a
 * 401 OIDC_REJECTED saying only "rejected", the check in the pool's audit log, never echoing the
 * token, changing nothing else), the key set
 * refreshed on an unknown kid, expiry with its own code, and renewal chains that keep an agent's
 * registration and die together when revoked.
 */
import { env } from "cloudflare:workers";
import { base64url, exportSPKI, SignJWT } from "jose";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type ErrorBody, requestJson } from "./helpers/api.ts";
import { snapshotD1 } from "./helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { addTrust, exchange, rsaKey, TestIssuer } from "./helpers/oidc.ts";
import { registerAgent, seedPool } from "./helpers/pools.ts";
import { queueRun, runnableWorkspace, TestAgent } from "./helpers/runs.ts";

const AUDIENCE = "outpost-agents";
const SUBJECT = "system:serviceaccount:ci:runner-7";

/** An org with a pool trusting a fresh issuer for `sub: system:serviceaccount:ci:*`. */
async function trustedPool(org?: TestOrg) {
  const owner = org ?? (await seedOrg());
  const pool = await seedPool(owner);
  const issuer = await TestIssuer.create();
  const trust = await addTrust(owner, pool.poolId, {
    issuer: issuer.url,
    audience: AUDIENCE,
    claims: { sub: "system:serviceaccount:ci:*", "kubernetes.io/namespace": "ci" },
  });
  const good = () => issuer.sign({ aud: AUDIENCE, sub: SUBJECT, "kubernetes.io/namespace": "ci" });
  return { org: owner, poolId: pool.poolId, issuer, trust, good };
}

type Listed = {
  id: string;
  expiresAt: string | null;
  oidc: { trustId: string; issuer: string; subject: string | null; chainId: string } | null;
};

async function listTokens(org: TestOrg, poolId: string): Promise<Listed[]> {
  const res = await requestJson<{ tokens: Listed[] }>(`/api/v1/pools/${poolId}/tokens`, {
    token: org.ownerToken,
  });
  expect(res.status).toBe(200);
  return res.body.tokens;
}

/**
 * A refused exchange: 401 with only "rejected" and the request id, no trace of the token; the
 * check that failed (`reason`) is in the pool's audit log, the only thing written. An unknown
 * pool (`reason` null) has no audit log to write to.
 */
async function expectRefused(poolId: string, token: string, reason: string | null) {
  const before = await snapshotD1();
  const res = await exchange(poolId, token);
  const text = JSON.stringify(res.body);
  expect(res.status, text).toBe(401);
  expect(res.body.error.code).toBe("OIDC_REJECTED");
  expect(res.body.error.details, text).toBeUndefined();
  expect(res.body.error.message, text).toBe(
    `OIDC token rejected; the pool's owners can see why in its audit log (request ${res.body.error.requestId})`,
  );
  for (const part of token.split(".").filter((p) => p.length > 8)) {
    expect(text).not.toContain(part);
  }
  const after = await snapshotD1();
  const audited = (after.audit_events ?? []).filter((row) => {
    const event = row as { action: string; target_id: string; data: string };
    return (
      event.action === "agent_token.oidc_refused" &&
      event.target_id === poolId &&
      JSON.parse(event.data).requestId === res.body.error.requestId
    );
  });
  expect(audited.map((row) => JSON.parse((row as { data: string }).data).reason)).toEqual(
    reason === null ? [] : [reason],
  );
  for (const part of token.split(".").filter((p) => p.length > 8)) {
    expect(JSON.stringify(audited)).not.toContain(part);
  }
  after.audit_events = (after.audit_events ?? []).filter((row) => !audited.includes(row));
  expect(after).toEqual(before);
}

// Every exchange fetches a loopback issuer's discovery document and keys through workerd's
// outbound fetch; on a loaded 2-core machine a test's few round trips can pass 5 s.
vi.setConfig({ testTimeout: 20_000 });

afterEach(() => {
  vi.useRealTimers();
});

describe("POST /agent/v1/oidc/exchange: success", () => {
  it("issues an agent token of the pool that expires when asked, listed as issued by OIDC", async () => {
    const { org, poolId, trust, issuer, good } = await trustedPool();
    const before = Date.now();
    const res = await exchange(poolId, await good(), { tokenExpirationSeconds: 600 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.token).toMatch(/^op_agent_[A-Za-z0-9_-]{43}$/);
    const expiresAt = Date.parse(res.body.expiresAt);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 600_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 600_000);
    // It speaks the agent protocol for its pool.
    expect(await registerAgent(res.body.token)).toMatch(/^agt_/);
    const listed = await listTokens(org, poolId);
    expect(listed.find((t) => t.id === res.body.tokenId)).toMatchObject({
      expiresAt: res.body.expiresAt,
      oidc: { trustId: trust.id, issuer: issuer.url, subject: SUBJECT, chainId: res.body.tokenId },
    });
  });

  it("caps the lifetime at the pool's maximum, one hour by default", async () => {
    const { org, poolId, good } = await trustedPool();
    const capped = await exchange(poolId, await good(), { tokenExpirationSeconds: 86_400 });
    expect(capped.status).toBe(200);
    expect(Date.parse(capped.body.expiresAt)).toBeLessThanOrEqual(Date.now() + 3_600_000);
    const patched = await requestJson(`/api/v1/pools/${poolId}`, {
      method: "PATCH",
      token: org.ownerToken,
      body: { maxTokenExpirationSeconds: 120 },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ maxTokenExpirationSeconds: 120 });
    const short = await exchange(poolId, await good(), { tokenExpirationSeconds: 3600 });
    expect(Date.parse(short.body.expiresAt)).toBeLessThanOrEqual(Date.now() + 120_000);
  });

  it("accepts aud as a list and matches the first trust whose conditions all hold", async () => {
    const { org, poolId, issuer } = await trustedPool();
    const second = await addTrust(org, poolId, {
      issuer: issuer.url,
      audience: "other",
      claims: { sub: "repo:acme/*:ref:refs/heads/main" },
    });
    const token = await issuer.sign({
      aud: ["x", "other"],
      sub: "repo:acme/infra:ref:refs/heads/main",
    });
    const res = await exchange(poolId, token);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const listed = await listTokens(org, poolId);
    expect(listed.find((t) => t.id === res.body.tokenId)?.oidc?.trustId).toBe(second.id);
  });
});

describe("POST /agent/v1/oidc/exchange: every check refuses on its own", () => {
  it("a token from an issuer the pool does not trust (untrusted_issuer)", async () => {
    const { poolId } = await trustedPool();
    const stranger = await TestIssuer.create("stranger");
    await expectRefused(
      poolId,
      await stranger.sign({ aud: AUDIENCE, sub: SUBJECT }),
      "untrusted_issuer",
    );
  });

  it("a token whose iss claims the trusted issuer but is signed by another key (invalid_signature)", async () => {
    const { poolId, issuer } = await trustedPool();
    const forger = await rsaKey(issuer.key.kid);
    const token = await issuer.sign(
      { aud: AUDIENCE, sub: SUBJECT, "kubernetes.io/namespace": "ci" },
      { key: forger },
    );
    await expectRefused(poolId, token, "invalid_signature");
  });

  it("the wrong audience (audience_mismatch)", async () => {
    const { poolId, issuer } = await trustedPool();
    const token = await issuer.sign({
      aud: "someone-else",
      sub: SUBJECT,
      "kubernetes.io/namespace": "ci",
    });
    await expectRefused(poolId, token, "audience_mismatch");
  });

  it("an expired token, beyond the 30 s clock skew (expired)", async () => {
    const { poolId, issuer } = await trustedPool();
    const now = Math.floor(Date.now() / 1000);
    const token = await issuer.sign({
      aud: AUDIENCE,
      sub: SUBJECT,
      "kubernetes.io/namespace": "ci",
      iat: now - 600,
      exp: now - 60,
    });
    await expectRefused(poolId, token, "expired");
  });

  it("a token expired within the clock skew is still accepted", async () => {
    const { poolId, issuer } = await trustedPool();
    const now = Math.floor(Date.now() / 1000);
    const token = await issuer.sign({
      aud: AUDIENCE,
      sub: SUBJECT,
      "kubernetes.io/namespace": "ci",
      exp: now - 10,
    });
    expect((await exchange(poolId, token)).status).toBe(200);
  });

  it("a token not valid yet, by nbf or by iat (not_yet_valid)", async () => {
    const { poolId, issuer } = await trustedPool();
    const now = Math.floor(Date.now() / 1000);
    const base = { aud: AUDIENCE, sub: SUBJECT, "kubernetes.io/namespace": "ci" };
    await expectRefused(poolId, await issuer.sign({ ...base, nbf: now + 300 }), "not_yet_valid");
    await expectRefused(poolId, await issuer.sign({ ...base, iat: now + 300 }), "not_yet_valid");
  });

  it("a token without exp (missing_expiration)", async () => {
    const { poolId, issuer } = await trustedPool();
    const token = await new SignJWT({
      aud: AUDIENCE,
      sub: SUBJECT,
      "kubernetes.io/namespace": "ci",
    })
      .setProtectedHeader({ alg: "RS256", kid: issuer.key.kid })
      .setIssuer(issuer.url)
      .setIssuedAt()
      .sign(issuer.key.privateKey);
    await expectRefused(poolId, token, "missing_expiration");
  });

  it("a claim that does not meet the trust's condition (claim_mismatch), or is missing", async () => {
    const { poolId, issuer } = await trustedPool();
    const wrongSub = await issuer.sign({
      aud: AUDIENCE,
      sub: "system:serviceaccount:prod:runner",
      "kubernetes.io/namespace": "ci",
    });
    await expectRefused(poolId, wrongSub, "claim_mismatch");
    const missing = await issuer.sign({ aud: AUDIENCE, sub: SUBJECT });
    await expectRefused(poolId, missing, "claim_mismatch");
  });

  it("an unknown kid, after refetching the key set once (unknown_key)", async () => {
    const { poolId, issuer } = await trustedPool();
    const token = await issuer.sign(
      { aud: AUDIENCE, sub: SUBJECT, "kubernetes.io/namespace": "ci" },
      { kid: "not-published" },
    );
    await expectRefused(poolId, token, "unknown_key");
  });

  it("alg none (unsupported_algorithm)", async () => {
    const { poolId, issuer } = await trustedPool();
    const header = base64url.encode(JSON.stringify({ alg: "none", typ: "JWT" }));
    const now = Math.floor(Date.now() / 1000);
    const payload = base64url.encode(
      JSON.stringify({
        iss: issuer.url,
        aud: AUDIENCE,
        sub: SUBJECT,
        "kubernetes.io/namespace": "ci",
        iat: now,
        exp: now + 300,
      }),
    );
    await expectRefused(poolId, `${header}.${payload}.`, "unsupported_algorithm");
  });

  it("HS256 signed with the issuer's public key as the secret (unsupported_algorithm)", async () => {
    const { poolId, issuer } = await trustedPool();
    // The classic key-confusion attack: the public key, as PEM or as the published JWK.
    const pem = await exportSPKI(issuer.key.publicKey);
    for (const [alg, text] of [
      ["HS256", pem],
      ["HS512", JSON.stringify(issuer.key.jwk)],
    ] as const) {
      const token = await new SignJWT({
        aud: AUDIENCE,
        sub: SUBJECT,
        "kubernetes.io/namespace": "ci",
      })
        .setProtectedHeader({ alg, kid: issuer.key.kid })
        .setIssuer(issuer.url)
        .setIssuedAt()
        .setExpirationTime("5m")
        .sign(new TextEncoder().encode(text));
      await expectRefused(poolId, token, "unsupported_algorithm");
    }
  });

  it("a token another pool trusts, presented to this pool (untrusted_issuer / claim_mismatch)", async () => {
    const first = await trustedPool();
    const other = await seedPool(first.org);
    await expectRefused(other.poolId, await first.good(), "untrusted_issuer");
    await addTrust(first.org, other.poolId, {
      issuer: first.issuer.url,
      audience: AUDIENCE,
      claims: { sub: "system:serviceaccount:prod:*" },
    });
    await expectRefused(other.poolId, await first.good(), "claim_mismatch");
    // And an unknown pool looks the same as a pool that trusts nobody.
    await expectRefused(`pool_${"a".repeat(26)}`, await first.good(), null);
  });

  it("not a JWT at all (malformed_token)", async () => {
    const { poolId } = await trustedPool();
    await expectRefused(poolId, "eyJ.not-a-jwt", "malformed_token");
  });

  it("an issuer whose discovery document names another issuer, or whose JWKS redirects (issuer_unreachable)", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    for (const suffix of ["-redirected", "-lying"]) {
      const issuer = new TestIssuer(`evil-${Date.now().toString(36)}${suffix}`);
      issuer.keys = [await rsaKey("k")];
      await issuer.publish();
      await addTrust(org, pool.poolId, {
        issuer: issuer.url,
        audience: AUDIENCE,
        claims: { sub: SUBJECT },
      });
      await expectRefused(
        pool.poolId,
        await issuer.sign({ aud: AUDIENCE, sub: SUBJECT }),
        "issuer_unreachable",
      );
    }
    const silent = new TestIssuer(`gone-${Date.now().toString(36)}`);
    silent.keys = [await rsaKey("k")];
    await addTrust(org, pool.poolId, {
      issuer: silent.url,
      audience: AUDIENCE,
      claims: { sub: SUBJECT },
    });
    await expectRefused(
      pool.poolId,
      await silent.sign({ aud: AUDIENCE, sub: SUBJECT }),
      "issuer_unreachable",
    );
  });
});

describe("POST /agent/v1/oidc/exchange: keys, input and credentials", () => {
  it("refetches the key set for a new kid once the 30 s cooldown has passed", async () => {
    const { poolId, issuer, good } = await trustedPool();
    expect((await exchange(poolId, await good())).status).toBe(200);
    const next = await rsaKey(`${issuer.name}-k2`);
    issuer.keys.push(next);
    await issuer.publish();
    const claims = { aud: AUDIENCE, sub: SUBJECT, "kubernetes.io/namespace": "ci" };
    // Within the cooldown the cached set stands: an unknown kid cannot make it refetch.
    await expectRefused(poolId, await issuer.sign(claims, { key: next }), "unknown_key");
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 31_000 });
    const res = await exchange(poolId, await issuer.sign(claims, { key: next }));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });

  it("refuses invalid bodies with 400 and changes nothing", async () => {
    const { poolId, good } = await trustedPool();
    const token = await good();
    for (const body of [
      {},
      { poolId, oidcToken: "" },
      { poolId: "pool_x", oidcToken: token },
      { poolId, oidcToken: token, tokenExpirationSeconds: 5 },
      { poolId, oidcToken: token, tokenExpirationSeconds: 86_401 },
      { poolId, oidcToken: token, extra: true },
      { poolId, oidcToken: "x".repeat(20_000) },
    ]) {
      const before = await snapshotD1();
      const res = await requestJson<ErrorBody>("/agent/v1/oidc/exchange", { method: "POST", body });
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(await snapshotD1()).toEqual(before);
    }
  });

  it("refuses any bearer but an agent token (org, run, garbage: 401)", async () => {
    const { org, poolId, good } = await trustedPool();
    const runnable = await runnableWorkspace(org);
    const agent = await TestAgent.register(runnable.agentToken);
    expect((await queueRun(org, runnable.workspace.id)).status).toBe(201);
    const job = await agent.lease();
    for (const bearer of [org.ownerToken, job.runToken ?? "", "op_org_short"]) {
      const before = await snapshotD1();
      const res = await exchange(poolId, await good(), { previous: bearer });
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe("UNAUTHORIZED");
      expect(await snapshotD1()).toEqual(before);
    }
  });
});

describe("OIDC-issued agent tokens: expiry and renewal", () => {
  it("an expired token is answered 401 TOKEN_EXPIRED, a revoked one TOKEN_REVOKED", async () => {
    const { org, poolId, good } = await trustedPool();
    const issued = await exchange(poolId, await good(), { tokenExpirationSeconds: 60 });
    const agentId = await registerAgent(issued.body.token);
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 61_000 });
    const expired = await requestJson<ErrorBody>("/agent/v1/heartbeat", {
      method: "POST",
      token: issued.body.token,
      headers: { "outpost-agent-id": agentId },
      body: { running: [] },
    });
    expect(expired.status).toBe(401);
    expect(expired.body.error.code).toBe("TOKEN_EXPIRED");
    vi.useRealTimers();
    const revoke = await requestJson(`/api/v1/pools/${poolId}/tokens/${issued.body.tokenId}`, {
      method: "DELETE",
      token: org.ownerToken,
    });
    expect(revoke.status).toBe(200);
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 61_000 });
    const revoked = await requestJson<ErrorBody>("/agent/v1/register", {
      method: "POST",
      token: issued.body.token,
      body: { version: "0.1.0", os: "linux", arch: "amd64" },
    });
    expect(revoked.body.error.code).toBe("TOKEN_REVOKED");
  });

  it("a renewal presenting the current token keeps the agent's registration and its job", async () => {
    const org = await seedOrg();
    const runnable = await runnableWorkspace(org);
    const issuer = await TestIssuer.create();
    await addTrust(org, runnable.poolId, {
      issuer: issuer.url,
      audience: AUDIENCE,
      claims: { sub: SUBJECT },
    });
    const first = await exchange(
      runnable.poolId,
      await issuer.sign({ aud: AUDIENCE, sub: SUBJECT }),
    );
    const agent = await TestAgent.register(first.body.token);
    expect((await queueRun(org, runnable.workspace.id)).status).toBe(201);
    const job = await agent.lease();
    await agent.start(job);

    const renewed = await exchange(
      runnable.poolId,
      await issuer.sign({ aud: AUDIENCE, sub: SUBJECT }),
      {
        previous: first.body.token,
      },
    );
    expect(renewed.status, JSON.stringify(renewed.body)).toBe(200);
    const next = Object.assign(new TestAgent(renewed.body.token), { agentId: agent.agentId });
    // Same agent, same lease: heartbeats and the finish work with the renewed token.
    const beat = await next.heartbeat([job]);
    expect(beat.status, JSON.stringify(beat.body)).toBe(200);
    expect(beat.body.exit).toBeNull();
    const finished = await next.finish(job, {
      outcome: "succeeded",
      planSummary: { adds: 0, changes: 0, destroys: 0, imports: 0, hasChanges: false },
    });
    expect(finished.status, JSON.stringify(finished.body)).toBe(200);

    const listed = await listTokens(org, runnable.poolId);
    const chain = listed.filter((t) => t.oidc?.chainId === first.body.tokenId);
    expect(chain.map((t) => t.id).sort()).toEqual(
      [first.body.tokenId, renewed.body.tokenId].sort(),
    );
    // The predecessor dies a minute after the renewal.
    const predecessor = chain.find((t) => t.id === first.body.tokenId);
    expect(Date.parse(predecessor?.expiresAt ?? "")).toBeLessThanOrEqual(Date.now() + 60_000);
  });

  it("revoking any token of a chain revokes the chain: its agent exits and it cannot be renewed", async () => {
    const { org, poolId, issuer } = await trustedPool();
    const sign = () =>
      issuer.sign({ aud: AUDIENCE, sub: SUBJECT, "kubernetes.io/namespace": "ci" });
    const first = await exchange(poolId, await sign());
    const agentId = await registerAgent(first.body.token);
    const second = await exchange(poolId, await sign(), { previous: first.body.token });
    const revoke = await requestJson<{ exitedAgentIds: string[] }>(
      `/api/v1/pools/${poolId}/tokens/${first.body.tokenId}`,
      { method: "DELETE", token: org.ownerToken },
    );
    expect(revoke.body.exitedAgentIds).toEqual([agentId]);
    const beat = await requestJson<ErrorBody>("/agent/v1/heartbeat", {
      method: "POST",
      token: second.body.token,
      headers: { "outpost-agent-id": agentId },
      body: { running: [] },
    });
    expect(beat.body.error.code).toBe("TOKEN_REVOKED");
    const before = await snapshotD1();
    const again = await exchange(poolId, await sign(), { previous: second.body.token });
    expect(again.status).toBe(401);
    expect(again.body.error.code).toBe("TOKEN_REVOKED");
    expect(await snapshotD1()).toEqual(before);
    // Without the revoked token, a new agent may still log in: removing the trust is the lockout.
    expect((await exchange(poolId, await sign())).status).toBe(200);
  });

  it("deleting the trust revokes every token it issued", async () => {
    const { org, poolId, trust, good } = await trustedPool();
    const issued = await exchange(poolId, await good());
    const agentId = await registerAgent(issued.body.token);
    const removed = await requestJson<{ revokedTokenIds: string[] }>(
      `/api/v1/pools/${poolId}/oidc-trusts/${trust.id}`,
      { method: "DELETE", token: org.ownerToken },
    );
    expect(removed.status).toBe(200);
    expect(removed.body.revokedTokenIds).toEqual([issued.body.tokenId]);
    const beat = await requestJson<ErrorBody>("/agent/v1/heartbeat", {
      method: "POST",
      token: issued.body.token,
      headers: { "outpost-agent-id": agentId },
      body: { running: [] },
    });
    expect(beat.body.error.code).toBe("TOKEN_REVOKED");
    await expectRefused(poolId, await good(), "untrusted_issuer");
    const rows = await env.DB.prepare("SELECT revoked_at FROM agent_tokens WHERE id = ?")
      .bind(issued.body.tokenId)
      .first<{ revoked_at: number | null }>();
    expect(rows?.revoked_at).not.toBeNull();
  });
});
