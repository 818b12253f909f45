/**
 * OIDC both ways through the real coordinator and the real agent process. An agent given only an
 * OIDC token file (from a loopback issuer signing with jose) logs in, runs jobs, renews its
 * short-lived agent token before each expiry (re-reading the file) and outlives the first token
 * while keeping its registration; an agent whose token expired while it was away renews on the
 * coordinator's TOKEN_EXPIRED; revoking the chain ends it with exit code 3. Each job of a
 * workspace with workload identity receives a token that verifies against the coordinator's
 * published JWKS with the documented claims.
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { createRemoteJWKSet, decodeJwt, jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AgentApi } from "../../agent/src/client/agent-api.ts";
import { oidcCredentials } from "../../agent/src/client/credentials.ts";
import { createLogger } from "../../agent/src/logger.ts";
import { type IssuerKey, OidcIssuerServer, rsaKey, signWith } from "../node/helpers/oidc-issuer.ts";
import {
  createWorkspace,
  ENGINE_VERSION,
  expectStatus,
  type Json,
  queueRun,
  readRunLog,
  setVariable,
  uploadConfiguration,
  waitForRun,
} from "./helpers/e2e.ts";
import { exitWithin, writeHook } from "./helpers/processes.ts";
import { useWorld } from "./helpers/world.ts";

const SUBJECT = "system:serviceaccount:ci:outpost-agent";
const AUDIENCE = "outpost";
const ROLE = "arn:aws:iam::123456789012:role/outpost-runs";

const world = useWorld();
const issuer = new OidcIssuerServer();
let key: IssuerKey;
let trustA: string;
let trustB: string;

/** A JWT as a kubelet would project it, for the pod named `pod`. */
function projected(pod: string, lifetimeSeconds = 600): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return signWith(key, {
    iss: issuer.issuer("k8s"),
    aud: AUDIENCE,
    sub: SUBJECT,
    "kubernetes.io/pod": pod,
    iat: now,
    nbf: now,
    exp: now + lifetimeSeconds,
  });
}

async function addTrust(pod: string): Promise<string> {
  const trust = await expectStatus(
    world.api("POST", `/api/v1/pools/${world.poolId}/oidc-trusts`, {
      issuer: issuer.issuer("k8s"),
      audience: AUDIENCE,
      claims: { sub: "system:serviceaccount:ci:*", "kubernetes.io/pod": pod },
    }),
    201,
  );
  return String(trust.id);
}

type Token = {
  id: string;
  expiresAt: string | null;
  oidc: { trustId: string; chainId: string } | null;
};

async function poolTokens(): Promise<Token[]> {
  const body = await expectStatus(world.api("GET", `/api/v1/pools/${world.poolId}/tokens`), 200);
  return body.tokens as Token[];
}

async function poolAgents(): Promise<Json[]> {
  const body = await expectStatus(world.api("GET", `/api/v1/pools/${world.poolId}`), 200);
  return (body.agents as Json[]).filter((a) => a.status !== "exited");
}

/** The reversed token a hook printed (reversing gets it past the masker, as documented). */
function printedToken(log: string): string {
  const match = /reversed-token: (\S+)/.exec(log);
  if (!match?.[1]) {
    throw new Error(`no reversed token in the log:\n${log}`);
  }
  return [...match[1]].reverse().join("");
}

beforeAll(async () => {
  [key] = await Promise.all([rsaKey("k8s-1"), issuer.start()]);
  issuer.publish("k8s", [key.publicJwk]);
  trustA = await addTrust("pod-1");
  trustB = await addTrust("pod-2");
});

afterAll(() => issuer.stop());

describe("an agent that logs in with an OIDC token file", () => {
  it("runs jobs, renews before expiry re-reading the file, keeps its registration, exits when revoked", async () => {
    const workspaceId = await createWorkspace(world, "oidc-runs", { autoApply: true });
    await expectStatus(
      world.api("PATCH", `/api/v1/workspaces/${workspaceId}`, { workloadIdentity: true }),
      200,
    );
    await setVariable(world, workspaceId, "OUTPOST_AWS_RUN_ROLE_ARN", ROLE, { category: "env" });
    await uploadConfiguration(world, workspaceId, {
      "main.tf": 'resource "null_resource" "a" {}\n',
    });
    const dataDir = world.freshDir("oidc-agent");
    writeHook(
      dataDir,
      "pre-plan",
      [
        'echo "role: $AWS_ROLE_ARN token: $OUTPOST_WORKLOAD_IDENTITY_TOKEN"',
        `echo "reversed-token: $(awk '{ s = ""; for (i = length($0); i > 0; i--) s = s substr($0, i, 1); print s }' "$AWS_WEB_IDENTITY_TOKEN_FILE")"`,
      ].join("\n"),
    );
    const tokenFile = path.join(dataDir, "projected.jwt");
    writeFileSync(tokenFile, await projected("pod-1"));
    const agent = world.startAgent({
      dataDir,
      args: ["--oidc-token-file", tokenFile, "--pool-id", world.poolId, "--token-expiration", "10"],
      env: { OUTPOST_TOKEN: "" },
    });
    await agent.waitForOutput(/registered/);
    const [registered] = await poolAgents();
    const firstTokens = await poolTokens();
    const first = firstTokens.find((t) => t.oidc?.trustId === trustA);
    expect(first?.oidc?.chainId).toBe(first?.id);
    expect(registered?.tokenId).toBe(first?.id);

    const run1 = await queueRun(world, workspaceId);
    await waitForRun(world, run1, ["applied"], 40_000);
    const log = await readRunLog(world, run1, "plan");
    expect(log).toContain(`role: ${ROLE} token: ***`);

    // The job's workload identity token verifies against the coordinator's published keys.
    const jwt = printedToken(log);
    expect(log).not.toContain(jwt);
    const discovery = (await (
      await fetch(`${world.coordinator.url}/.well-known/openid-configuration`)
    ).json()) as { issuer: string; jwks_uri: string };
    expect(discovery.issuer).toBe(world.coordinator.url);
    const jwks = createRemoteJWKSet(new URL(discovery.jwks_uri));
    const { payload } = await jwtVerify(jwt, jwks, {
      issuer: world.coordinator.url,
      audience: world.coordinator.url,
      algorithms: ["RS256"],
    });
    expect(payload).toMatchObject({
      sub: `organization:e2e:workspace:oidc-runs:run_phase:plan`,
      outpost_run_id: run1,
      outpost_workspace_id: workspaceId,
      outpost_pool_id: world.poolId,
      outpost_engine: "terraform",
      outpost_engine_version: ENGINE_VERSION,
      outpost_speculative: false,
      outpost_fork: false,
    });

    // From now on the file holds the token of "pod-2": renewals must read it (trust B).
    writeFileSync(tokenFile, await projected("pod-2"));
    const firstExpiry = Date.parse(first?.expiresAt ?? "");
    await delay(Math.max(0, firstExpiry - Date.now()) + 2_000);
    const run2 = await queueRun(world, workspaceId);
    // Nothing changed since the first run: the plan finishes the run.
    await waitForRun(world, run2, ["planned_and_finished"], 40_000);

    const agents = await poolAgents();
    expect(agents.map((a) => a.id)).toEqual([registered?.id]);
    const tokens = await poolTokens();
    const renewed = tokens.find((t) => t.oidc?.trustId === trustB);
    expect(renewed?.oidc?.chainId).toBe(first?.id);
    expect(agent.output()).not.toMatch(/TOKEN_EXPIRED|registering again/);

    // Revoking the chain (any of its tokens) ends the agent with the token-revoked exit code.
    await expectStatus(
      world.api("DELETE", `/api/v1/pools/${world.poolId}/tokens/${renewed?.id}`),
      200,
    );
    const exit = await exitWithin(agent, 30_000);
    expect(exit.code, agent.output()).toBe(3);
    expect(readFileSync(tokenFile, "utf8")).not.toBe("");
  });

  it("renews on TOKEN_EXPIRED when the token ran out while the agent was away", async () => {
    const dir = world.freshDir("oidc-expired");
    const tokenFile = path.join(dir, "token.jwt");
    writeFileSync(tokenFile, await projected("pod-1"));
    const logger = createLogger({ level: "fatal", json: true });
    const target = { address: world.coordinator.url, userAgent: "e2e" };
    const credentials = oidcCredentials({
      target,
      tokenFile,
      poolId: world.poolId,
      tokenExpirationSeconds: 10,
      logger,
    });
    const api = new AgentApi({ address: world.coordinator.url, credentials, userAgent: "e2e" });
    const { agentId } = await api.register({
      name: "away",
      version: "0.1.0",
      os: "linux",
      arch: "x64",
      capacity: 1,
      acceptedPhases: ["plan"],
    });
    // No renewal timer: the agent is "suspended" past its token's expiry.
    credentials.stop();
    const stale = await credentials.current();
    await delay(11_000);
    const beat = await api.heartbeat([]);
    expect(beat.exit).toBeNull();
    expect(api.id).toBe(agentId);
    expect(await credentials.current()).not.toBe(stale);
    const agents = await poolAgents();
    expect(agents.some((a) => a.id === agentId)).toBe(true);
    await api.goodbye("done");
    expect(decodeJwt(readFileSync(tokenFile, "utf8")).sub).toBe(SUBJECT);
  });
});
