/**
 * `GET /agent/v1/release`, `GET /agent/v1/install.sh` and the shipped agent version on agent
 * answers, against the real static assets of the agent build (the vitest setup builds it; the
 * ASSETS binding serves it). Both routes are public by design: they hold nothing secret, the
 * files are public assets, and a host asks before it has a token.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import {
  AGENT_VERSION_HEADER,
  AgentRelease,
  RELEASE_MANIFEST_PATH,
  ReleaseManifest,
} from "@outpost/protocol";
import { describe, expect, it } from "vitest";
import agentPackage from "../../agent/package.json";
import { newApp } from "../../src/app.ts";
import { systemClock } from "../../src/deps.ts";
import { BASE, type ErrorBody, request, requestJson } from "./helpers/api.ts";
import { seedOrg } from "./helpers/fixtures.ts";
import { registerAgent, revokedAgentToken, seedPool } from "./helpers/pools.ts";

async function asset(path: string): Promise<Response> {
  return env.ASSETS.fetch(new Request(`${BASE}${path}`));
}

async function sha256(bytes: ArrayBuffer): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function shippedManifest(): Promise<ReleaseManifest> {
  return ReleaseManifest.parse(await (await asset(RELEASE_MANIFEST_PATH)).json());
}

describe("GET /agent/v1/release", () => {
  it("names the shipped build with absolute URLs whose bytes match their SHA-256", async () => {
    const manifest = await shippedManifest();
    expect(manifest.version).toBe(agentPackage.version);
    const res = await requestJson<AgentRelease>("/agent/v1/release");
    expect(res.status).toBe(200);
    const release = AgentRelease.parse(res.body);
    expect(release).toMatchObject({
      version: manifest.version,
      sha256: manifest.agent.sha256,
      url: `${BASE}${manifest.agent.path}`,
      sizeBytes: manifest.agent.sizeBytes,
      npmPackage: { url: `${BASE}${manifest.npmPackage.path}`, sha256: manifest.npmPackage.sha256 },
    });
    expect(res.headers.get("cache-control")).toBe("no-cache");
    for (const file of [release, release.npmPackage, release.dockerfile, release.systemdUnit]) {
      const bytes = await (await asset(new URL(file.url).pathname)).arrayBuffer();
      expect(bytes.byteLength).toBe(file.sizeBytes);
      expect(await sha256(bytes)).toBe(file.sha256);
    }
    const agentFile = await (await asset(new URL(release.url).pathname)).text();
    expect(agentFile.startsWith("#!/usr/bin/env node\n")).toBe(true);
  });

  it("needs no token, and a garbage or revoked one changes nothing (public by design)", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const revoked = await revokedAgentToken(org, pool.poolId);
    for (const token of [null, "garbage", revoked, org.ownerToken, pool.token]) {
      const res = await request("/agent/v1/release", { token });
      expect(res.status).toBe(200);
      await res.body?.cancel();
    }
  });

  it("answers 503 naming the fix when the deployment has no agent build", async () => {
    // A deployment without `npm run build:agent`: its assets have no manifest, so the binding
    // answers 404 for it, as the real binding does for any missing file.
    const withoutBuild = {
      ...env,
      ASSETS: { fetch: async () => new Response("not found", { status: 404 }) },
    } as unknown as Env;
    const app = newApp(systemClock);
    for (const path of ["/agent/v1/release", "/agent/v1/install.sh"]) {
      const ctx = createExecutionContext();
      const res = await app.fetch(new Request(`${BASE}${path}`), withoutBuild, ctx);
      await waitOnExecutionContext(ctx);
      expect(res.status).toBe(503);
      const body = (await res.json()) as ErrorBody;
      expect(body.error.code).toBe("UNAVAILABLE");
      expect(body.error.message).toContain("npm run build:agent");
    }
  });
});

describe("GET /agent/v1/install.sh", () => {
  it("is a POSIX sh script with the coordinator, the URLs and their digests written in", async () => {
    const manifest = await shippedManifest();
    const res = await request("/agent/v1/install.sh");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/x-shellscript; charset=utf-8");
    const script = await res.text();
    expect(script.startsWith("#!/bin/sh\n")).toBe(true);
    expect(script).toContain("set -eu\n");
    expect(script).toContain(`OUTPOST_ADDRESS='${BASE}'`);
    expect(script).toContain(`VERSION='${manifest.version}'`);
    expect(script).toContain(`AGENT_URL='${BASE}${manifest.agent.path}'`);
    expect(script).toContain(`AGENT_SHA256='${manifest.agent.sha256}'`);
    expect(script).toContain(`PACKAGE_SHA256='${manifest.npmPackage.sha256}'`);
    expect(script).toContain(`UNIT_SHA256='${manifest.systemdUnit.sha256}'`);
    // Nothing it downloads goes into a shell; it is run by sh and tested with sh and shellcheck
    // in test/node/agent-package.test.ts.
    expect(script).not.toMatch(/\|\s*(ba|da|z)?sh\b/);
    expect(script).not.toMatch(/\beval\b/);
  });

  it("quotes an origin with a quote in it so the script stays one word", async () => {
    const res = await exportsFetch("http://o'brien.test/agent/v1/install.sh");
    expect(await res.text()).toContain(`OUTPOST_ADDRESS='http://o'\\''brien.test'`);
  });
});

describe("the shipped agent version on agent answers", () => {
  it("is in the register answer and the Outpost-Agent-Version header of every agent answer", async () => {
    const { version } = await shippedManifest();
    const org = await seedOrg();
    const pool = await seedPool(org);
    const res = await requestJson<{ agentVersion: string | null }>("/agent/v1/register", {
      method: "POST",
      token: pool.token,
      body: { version: "0.0.1", os: "linux", arch: "x64" },
    });
    expect(res.status).toBe(201);
    expect(res.body.agentVersion).toBe(version);
    expect(res.headers.get(AGENT_VERSION_HEADER)).toBe(version);
    const agentId = await registerAgent(pool.token);
    const beat = await request("/agent/v1/heartbeat", {
      method: "POST",
      token: pool.token,
      headers: { "outpost-agent-id": agentId },
      body: { running: [] },
    });
    expect(beat.status).toBe(200);
    expect(beat.headers.get(AGENT_VERSION_HEADER)).toBe(version);
    const refused = await request("/agent/v1/heartbeat", { method: "POST", token: "garbage" });
    expect(refused.status).toBe(401);
    expect(refused.headers.get(AGENT_VERSION_HEADER)).toBe(version);
    const api = await request("/api/v1/organization", { token: org.ownerToken });
    expect(api.headers.get(AGENT_VERSION_HEADER)).toBeNull();
  });

  it("is null in the register answer of a deployment without an agent build", async () => {
    const org = await seedOrg();
    const pool = await seedPool(org);
    const withoutBuild = {
      ...env,
      ASSETS: { fetch: async () => new Response("not found", { status: 404 }) },
    } as unknown as Env;
    const ctx = createExecutionContext();
    const res = await newApp(systemClock).fetch(
      new Request(`${BASE}/agent/v1/register`, {
        method: "POST",
        headers: { authorization: `Bearer ${pool.token}`, "content-type": "application/json" },
        body: JSON.stringify({ version: "0.1.0", os: "linux", arch: "x64" }),
      }),
      withoutBuild,
      ctx,
    );
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(201);
    expect(((await res.json()) as { agentVersion: unknown }).agentVersion).toBeNull();
    expect(res.headers.get(AGENT_VERSION_HEADER)).toBeNull();
  });
});

async function exportsFetch(url: string): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await newApp(systemClock).fetch(new Request(url), env, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}
