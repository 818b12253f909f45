/**
 * The agent's workload identity renewal, through the real job port against a loopback server
 * that answers as the coordinator's `POST /agent/v1/jobs/:jobId/workload-identity` does; time is
 * driven with fake timers, so the 2/3-of-lifetime point is reached without waiting for it.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { jobPort } from "../../agent/src/client/job-port.ts";
import { renewalDelayMs, startIdentityRenewal } from "../../agent/src/job/identity-renewal.ts";

const JOB = `run_${"a".repeat(26)}:plan`;

/** An unsigned JWT with these claims: the agent reads `iat`/`exp`, never verifies. */
function jwt(claims: { iat: number; exp: number; jti: string }): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  return `${part({ alg: "RS256", typ: "JWT" })}.${part(claims)}.c2ln`;
}

type Answer = { status: number; body?: object };

let server: Server;
let address: string;
let answers: Answer[];
let requests: { path: string; authorization: string | undefined }[];
let dir: string;

beforeEach(async () => {
  answers = [];
  requests = [];
  dir = mkdtempSync(path.join(tmpdir(), "identity-renewal-"));
  server = createServer((req, res) => {
    requests.push({ path: req.url ?? "", authorization: req.headers.authorization });
    const answer = answers.shift() ?? { status: 401, body: { error: { code: "UNAUTHORIZED" } } };
    res.writeHead(answer.status, { "content-type": "application/json" });
    res.end(JSON.stringify(answer.body ?? { error: { code: "UNAVAILABLE", message: "busy" } }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  address = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
});

afterEach(async () => {
  vi.useRealTimers();
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

const port = () =>
  jobPort({ target: { address, userAgent: "test" }, jobId: JOB, leaseId: "l1", runToken: "rt" });

/** The real setTimeout, kept before fake timers replace it. */
const realSetTimeout = globalThis.setTimeout;

/**
 * Advances fake time in steps of `step` ms, giving real I/O (the loopback server, the disk) a few
 * real milliseconds after each, until `ms` have passed or `until` holds.
 */
async function advance(ms: number, until: () => boolean = () => false, step = 250) {
  for (let spent = 0; spent < ms && !until(); spent += step) {
    await vi.advanceTimersByTimeAsync(step);
    await new Promise((resolve) => realSetTimeout(resolve, 5));
  }
}

describe("workload identity renewal", () => {
  it("renews at 2/3 of the token's own lifetime", () => {
    expect(renewalDelayMs(jwt({ iat: 1000, exp: 1060, jti: "a" }))).toBe(40_000);
    expect(renewalDelayMs(jwt({ iat: 1000, exp: 1900, jti: "a" }))).toBe(600_000);
  });

  it("rewrites the file atomically with a fresh token, retrying a 503, and stops once the job ended", async () => {
    const first = jwt({ iat: 0, exp: 60, jti: "first" });
    const second = jwt({ iat: 40, exp: 100, jti: "second" });
    const file = path.join(dir, "workload-identity.jwt");
    writeFileSync(file, first, { mode: 0o600 });
    answers.push({ status: 503 }, { status: 200, body: { token: second, expiresAt: "x" } });
    const stopped: string[] = [];
    const renewed: string[] = [];
    const renewal = startIdentityRenewal({
      file,
      token: first,
      renew: () => port().renewWorkloadIdentity(),
      onRenewed: (token) => renewed.push(token),
      onStopped: (why) => stopped.push(why),
    });

    await advance(39_000);
    expect(requests).toEqual([]);
    expect(readFileSync(file, "utf8")).toBe(first);

    await advance(20_000, () => renewed.length > 0);
    expect(readFileSync(file, "utf8")).toBe(second);
    expect(renewed).toEqual([second]);
    expect(requests).toHaveLength(2);
    expect(requests[0]).toEqual({
      path: `/agent/v1/jobs/${encodeURIComponent(JOB)}/workload-identity`,
      authorization: "Bearer rt",
    });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(["workload-identity.jwt"]);

    // The job ended: its run token is refused, the loop ends and the file keeps the last token.
    await advance(60_000, () => stopped.length > 0);
    expect(requests).toHaveLength(3);
    expect(stopped[0]).toMatch(/401/);
    await advance(600_000, () => false, 5000);
    expect(requests).toHaveLength(3);
    expect(readFileSync(file, "utf8")).toBe(second);
    await renewal.stop();
  });

  it("asks for nothing once stopped", async () => {
    const token = jwt({ iat: 0, exp: 60, jti: "only" });
    const file = path.join(dir, "workload-identity.jwt");
    writeFileSync(file, token, { mode: 0o600 });
    const renewal = startIdentityRenewal({
      file,
      token,
      renew: () => port().renewWorkloadIdentity(),
    });
    await advance(10_000);
    await renewal.stop();
    await advance(600_000, () => false, 5000);
    expect(requests).toEqual([]);
    expect(readFileSync(file, "utf8")).toBe(token);
  });
});
