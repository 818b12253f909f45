/**
 * `GET /agent/v1/release`, `GET /agent/v1/install.sh` and the shipped agent version on agent
 * answers, against the real static assets of the agent build (the vitest setup builds and signs
 * it; the ASSETS binding serves it). Both routes are public by design: they hold nothing secret,
 * the files are public assets, and a host asks before it has a token. Their addresses are the
 * deployment's PUBLIC_URL, whatever Host the request names (issue 25, finding 9).
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import {
  AGENT_VERSION_HEADER,
  AgentRelease,
  RELEASE_MANIFEST_PATH,
  RELEASE_SIGNATURE_CONTEXT,
  RELEASE_SIGNATURE_PATH,
  ReleaseManifest,
  ReleaseSignature,
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

/** The deployment's public origin in the test bindings; requests go to BASE (another origin). */
const PUBLIC = "https://outpost.test";

/** Verifies a release signature with WebCrypto's Ed25519, as any third party could. */
async function verifies(text: string, signature: ReleaseSignature): Promise<boolean> {
  const raw = Uint8Array.from(atob(signature.key.slice("ed25519:".length)), (c) => c.charCodeAt(0));
  const key = await crypto.subtle.importKey("raw", raw, { name: "Ed25519" }, false, ["verify"]);
  const signed = new TextEncoder().encode(`${RELEASE_SIGNATURE_CONTEXT}${text}`);
  const bytes = Uint8Array.from(atob(signature.signature), (c) => c.charCodeAt(0));
  return crypto.subtle.verify("Ed25519", key, bytes, signed);
}

/** The app with `overrides` of the test bindings, fetched at `url` (any Host a caller writes). */
async function fetchWith(
  url: string,
  overrides: Partial<Record<keyof Env, unknown>> = {},
  init: RequestInit = {},
): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await newApp(systemClock).fetch(
    new Request(url, init),
    { ...env, ...overrides } as Env,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}

describe("GET /agent/v1/release", () => {
  it("names the shipped build on PUBLIC_URL, with URLs whose bytes match their SHA-256", async () => {
    const manifest = await shippedManifest();
    expect(manifest.version).toBe(agentPackage.version);
    const res = await requestJson<AgentRelease>("/agent/v1/release");
    expect(res.status).toBe(200);
    const release = AgentRelease.parse(res.body);
    expect(release).toMatchObject({
      version: manifest.version,
      sha256: manifest.agent.sha256,
      url: `${PUBLIC}${manifest.agent.path}`,
      sizeBytes: manifest.agent.sizeBytes,
      npmPackage: {
        url: `${PUBLIC}${manifest.npmPackage.path}`,
        sha256: manifest.npmPackage.sha256,
      },
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

  it("serves the manifest exactly as the build signed it, and the build's Ed25519 signature", async () => {
    const text = await (await asset(RELEASE_MANIFEST_PATH)).text();
    const signature = ReleaseSignature.parse(await (await asset(RELEASE_SIGNATURE_PATH)).json());
    const release = AgentRelease.parse((await requestJson("/agent/v1/release")).body);
    expect(release.manifest).toBe(text);
    expect(release.signature).toEqual(signature);
    expect(await verifies(release.manifest, signature)).toBe(true);
    // One changed byte and it no longer verifies: the agent and installer believe nothing else.
    expect(await verifies(release.manifest.replace('"version"', '"versioN"'), signature)).toBe(
      false,
    );
  });

  it("answers signature null for a build that carries none, so agents refuse it as unsigned", async () => {
    const unsigned = {
      fetch: async (req: Request) =>
        new URL(req.url).pathname === RELEASE_SIGNATURE_PATH
          ? new Response("not found", { status: 404 })
          : env.ASSETS.fetch(req),
    };
    const res = await fetchWith(`${BASE}/agent/v1/release`, { ASSETS: unsigned });
    expect(res.status).toBe(200);
    expect(AgentRelease.parse(await res.json()).signature).toBeNull();
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
    const ASSETS = { fetch: async () => new Response("not found", { status: 404 }) };
    for (const path of ["/agent/v1/release", "/agent/v1/install.sh"]) {
      const res = await fetchWith(`${BASE}${path}`, { ASSETS });
      expect(res.status).toBe(503);
      const body = (await res.json()) as ErrorBody;
      expect(body.error.code).toBe("UNAVAILABLE");
      expect(body.error.message).toContain("npm run build:agent");
    }
  });
});

describe("addresses come from PUBLIC_URL, never from the request's Host", () => {
  const forged = {
    headers: { host: "attacker.example", "x-forwarded-host": "attacker.example" },
  };

  it("a forged Host changes no URL of the release or the install script", async () => {
    const release = await fetchWith("https://attacker.example/agent/v1/release", {}, forged);
    expect(release.status).toBe(200);
    const body = AgentRelease.parse(await release.json());
    for (const file of [body, body.npmPackage, body.dockerfile, body.systemdUnit]) {
      expect(new URL(file.url).origin).toBe(PUBLIC);
    }
    const script = await (
      await fetchWith("https://attacker.example/agent/v1/install.sh", {}, forged)
    ).text();
    expect(script).toContain(`OUTPOST_ADDRESS='${PUBLIC}'`);
    expect(script).not.toContain("attacker.example");
  });

  it("without PUBLIC_URL, answers 503 saying so to any host but loopback", async () => {
    for (const url of [
      "https://attacker.example/agent/v1/release",
      "https://outpost.example.com/agent/v1/install.sh",
      "http://10.0.0.5:8787/agent/v1/release",
    ]) {
      const res = await fetchWith(url, { PUBLIC_URL: "" }, forged);
      expect(res.status, url).toBe(503);
      const body = (await res.json()) as ErrorBody;
      expect(body.error).toMatchObject({ code: "UNAVAILABLE" });
      expect(body.error.message).toContain("PUBLIC_URL is not set");
    }
  });

  it("without PUBLIC_URL, loopback development answers with the request's own origin", async () => {
    for (const origin of ["http://127.0.0.1:8787", "http://localhost:8787", "http://[::1]:8787"]) {
      const res = await fetchWith(`${origin}/agent/v1/release`, { PUBLIC_URL: "" });
      expect(res.status, origin).toBe(200);
      expect(new URL(AgentRelease.parse(await res.json()).url).origin).toBe(origin);
    }
  });
});

describe("GET /agent/v1/install.sh", () => {
  it("is a POSIX sh script with the coordinator, the signed manifest and its signature written in", async () => {
    const text = await (await asset(RELEASE_MANIFEST_PATH)).text();
    const signature = ReleaseSignature.parse(await (await asset(RELEASE_SIGNATURE_PATH)).json());
    const res = await request("/agent/v1/install.sh");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/x-shellscript; charset=utf-8");
    const script = await res.text();
    expect(script.startsWith("#!/bin/sh\n")).toBe(true);
    expect(script).toContain("set -eu\n");
    expect(script).toContain(`OUTPOST_ADDRESS='${PUBLIC}'`);
    const embedded = /^MANIFEST='([A-Za-z0-9+/=]+)'$/m.exec(script)?.[1] ?? "";
    expect(new TextDecoder().decode(Uint8Array.from(atob(embedded), (c) => c.charCodeAt(0)))).toBe(
      text,
    );
    expect(script).toContain(`SIGNATURE='${signature.signature}'`);
    expect(script).toContain(`SIGNED_BY='${signature.key}'`);
    // Nothing it downloads goes into a shell; it is run by sh and tested with sh and shellcheck
    // in test/e2e/agent-package.test.ts and test/e2e/installer-privilege.test.ts.
    expect(script).not.toMatch(/\|\s*(ba|da|z)?sh\b/);
    expect(script).not.toMatch(/\beval\b/);
  });

  it("quotes a public address with a quote in it so the script stays one word", async () => {
    const res = await fetchWith("https://outpost.test/agent/v1/install.sh", {
      PUBLIC_URL: "http://o'brien.test",
    });
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
