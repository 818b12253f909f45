import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AgentApi, isAgentUnknown, TokenRejected } from "../../agent/src/client/agent-api.ts";
import { toRunnerJob } from "../../agent/src/client/assignment.ts";
import { staticCredentials } from "../../agent/src/client/credentials.ts";
import { CoordinatorError, ProtocolError } from "../../agent/src/client/http.ts";
import { jobPort } from "../../agent/src/client/job-port.ts";
import { TransientError } from "../../agent/src/errors.ts";
import { EXIT_CODES } from "../../agent/src/exit-codes.ts";

type Seen = { method: string; url: string; headers: IncomingMessage["headers"]; body: Buffer };
type Handler = (req: Seen, res: ServerResponse) => void;

const AGENT_ID = `agt_${"a".repeat(26)}`;
const LEASE_ID = `lease_${"b".repeat(26)}`;
const JOB_ID = `run_${"c".repeat(26)}:plan`;
const TOKEN = "op_agent_secret";
let server: Server;
let address: string;
let handler: Handler;
const seen: Seen[] = [];
const dir = mkdtempSync(path.join(tmpdir(), "outpost-client-"));

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const entry = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks),
      };
      seen.push(entry);
      handler(entry, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  address = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  seen.length = 0;
});

function reply(status: number, body?: unknown, headers: Record<string, string> = {}): Handler {
  return (_req, res) => {
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(
      body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
    );
  };
}
const apiError = (code: string, message = "no") => ({ error: { code, message, requestId: "r" } });

function api(): AgentApi {
  return new AgentApi({ address, credentials: staticCredentials(TOKEN), userAgent: "test" });
}

async function registered(): Promise<AgentApi> {
  const client = api();
  handler = reply(201, {
    agentId: AGENT_ID,
    poolId: "pool_x",
    heartbeatIntervalSeconds: 10,
    pollWaitSeconds: 50,
    leaseStartTimeoutSeconds: 30,
  });
  await client.register({
    name: null,
    version: "0.1.0",
    os: "linux",
    arch: "x64",
    capacity: 2,
    acceptedPhases: ["plan"],
  });
  return client;
}

describe("the agent API client", () => {
  it("registers, then names itself on every call, with the agent token as bearer", async () => {
    const client = await registered();
    expect(client.id).toBe(AGENT_ID);
    expect(JSON.parse(seen[0]?.body.toString() ?? "")).toMatchObject({
      capacity: 2,
      acceptedPhases: ["plan"],
    });
    handler = reply(204);
    expect(await client.next(5)).toBeNull();
    expect(seen[1]).toMatchObject({ method: "POST", url: "/agent/v1/jobs/next?wait=5" });
    expect(seen[1]?.headers["outpost-agent-id"]).toBe(AGENT_ID);
    expect(seen[1]?.headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it("percent-encodes the job id's colon in lease paths", async () => {
    const client = await registered();
    handler = reply(200, { jobId: JOB_ID, leaseId: LEASE_ID, state: "started" });
    await client.start(JOB_ID, LEASE_ID);
    expect(seen[1]?.url).toBe(
      `/agent/v1/jobs/run_${"c".repeat(26)}%3Aplan/leases/${LEASE_ID}/start`,
    );
  });

  it("maps 429 (with Retry-After), 5xx and unreachable coordinators to TransientError", async () => {
    const client = await registered();
    handler = reply(429, apiError("RATE_LIMITED"), { "retry-after": "7" });
    const limited = await client.heartbeat([]).catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(TransientError);
    expect((limited as TransientError).retryAfter).toBe("7");
    handler = reply(503, "<html>bad gateway</html>");
    await expect(client.heartbeat([])).rejects.toBeInstanceOf(TransientError);
    const gone = new AgentApi({
      address: "http://127.0.0.1:9",
      credentials: staticCredentials(TOKEN),
      userAgent: "t",
    });
    await expect(gone.heartbeat([])).rejects.toThrow(/cannot reach http:\/\/127\.0\.0\.1:9/);
  });

  it("turns 401 into the token-revoked exit, and 404 on agent calls into 'register again'", async () => {
    const client = await registered();
    handler = reply(401, apiError("TOKEN_REVOKED", "this token has been revoked"));
    const revoked = await client.heartbeat([]).catch((e: unknown) => e);
    expect(revoked).toBeInstanceOf(TokenRejected);
    expect((revoked as TokenRejected).exitCode).toBe(EXIT_CODES.tokenRevoked);
    handler = reply(404, apiError("NOT_FOUND", "agent is not registered"));
    expect(isAgentUnknown(await client.heartbeat([]).catch((e: unknown) => e))).toBe(true);
    handler = reply(409, apiError("LEASE_LOST"));
    const lost = await client
      .finish(JOB_ID, LEASE_ID, { outcome: "succeeded", exitCode: 0 })
      .catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(CoordinatorError);
    expect(lost).toMatchObject({ status: 409, code: "LEASE_LOST" });
  });

  it("refuses answers that do not match the protocol with a ProtocolError", async () => {
    const client = await registered();
    handler = reply(200, { cancel: "nope" });
    await expect(client.heartbeat([])).rejects.toBeInstanceOf(ProtocolError);
    handler = reply(200, "not json");
    await expect(client.heartbeat([])).rejects.toThrow(/unexpected answer/);
  });
});

describe("the job port (run token)", () => {
  const port = () =>
    jobPort({
      target: { address, userAgent: "test" },
      jobId: JOB_ID,
      leaseId: LEASE_ID,
      runToken: "op_run_token",
    });

  it("appends log chunks and resumes from the length a 416 carries", async () => {
    handler = reply(200, { received: 3 });
    expect(await port().sendLogChunk(0, Buffer.from("abc"))).toEqual({ ok: true });
    expect(seen[0]?.url).toBe(
      `/agent/v1/jobs/${encodeURIComponent(JOB_ID)}/leases/${LEASE_ID}/logs?offset=0`,
    );
    expect(seen[0]?.headers.authorization).toBe("Bearer op_run_token");
    handler = reply(416, apiError("RANGE_NOT_SATISFIABLE"), { "Outpost-Log-Length": "17" });
    expect(await port().sendLogChunk(3, Buffer.from("def"))).toEqual({ rangeMismatch: 17 });
    handler = reply(409, apiError("LEASE_LOST"));
    await expect(port().sendLogChunk(3, Buffer.from("x"))).rejects.toBeInstanceOf(CoordinatorError);
  });

  it("uploads artifacts under their wire names with a Content-Length, and downloads them", async () => {
    const file = path.join(dir, "lock");
    writeFileSync(file, "lock file body");
    handler = reply(200, { name: "terraform.lock.hcl", sizeBytes: 14 });
    await port().uploadArtifact("lock-file", file);
    expect(seen[0]).toMatchObject({
      method: "PUT",
      url: `/agent/v1/jobs/${encodeURIComponent(JOB_ID)}/artifacts/terraform.lock.hcl`,
    });
    expect(seen[0]?.headers["content-length"]).toBe("14");
    handler = (_req, res) => res.writeHead(200).end("plan bytes");
    const dest = path.join(dir, "plan");
    expect(await port().downloadArtifact("plan-file", dest)).toBe(true);
    expect(readFileSync(dest, "utf8")).toBe("plan bytes");
    expect(seen[1]?.url).toMatch(/\/artifacts\/plan\.tfplan$/);
    handler = reply(404, apiError("NOT_FOUND"));
    expect(await port().downloadArtifact("lock-file", dest)).toBe(false);
  });

  it("never sends the run token to another host", async () => {
    await expect(
      port().downloadConfiguration("https://elsewhere.example/config", path.join(dir, "c")),
    ).rejects.toThrow(/refusing to send the run token/);
    expect(seen).toHaveLength(0);
  });
});

describe("the job as the runner sees it", () => {
  const wire = (spec: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    jobId: JOB_ID,
    leaseId: LEASE_ID,
    runId: `run_${"c".repeat(26)}`,
    workspaceId: "ws_1",
    phase: "plan" as const,
    startBy: new Date().toISOString(),
    spec,
    runToken: "op_run_token",
    variables: [
      {
        key: "pw",
        value: "s3cret",
        category: "terraform" as const,
        isHcl: false,
        isSensitive: true,
      },
    ],
    ...extra,
  });
  const spec = {
    operation: "apply",
    phase: "plan",
    isSpeculative: false,
    isDestroy: false,
    workspaceName: "net",
    engine: "tofu",
    engineVersion: "1.8.0",
    workingDirectory: "envs/prod",
    configuration: {
      id: "cv_1",
      source: "upload",
      sha256: "ab".repeat(32),
      sizeBytes: 10,
      repoUrl: null,
      commitSha: null,
    },
    isFork: false,
    planSha256: null,
  };

  it("maps an uploaded configuration, variables and the state address", () => {
    const mapped = toRunnerJob(wire(spec), "https://outpost.example");
    expect(mapped).toEqual({
      ok: true,
      value: expect.objectContaining({
        engine: "tofu",
        engineVersion: "1.8.0",
        workingDirectory: "envs/prod",
        isSpeculative: false,
        isFork: false,
        planSha256: null,
        operation: "apply",
        workspaceName: "net",
        stateAddress: "https://outpost.example/state/v1/ws_1",
        source: {
          kind: "configuration",
          url: `https://outpost.example/agent/v1/jobs/${encodeURIComponent(JOB_ID)}/configuration`,
          sha256: "ab".repeat(32),
        },
        variables: [
          { key: "pw", value: "s3cret", category: "terraform", isHcl: false, isSensitive: true },
        ],
        withheldVariables: [],
        planOptions: { targetAddrs: [], replaceAddrs: [], refresh: true },
      }),
    });
  });

  it("carries a run's targets, replacements and refresh=false to the runner", () => {
    const options = { targetAddrs: ["a.b"], replaceAddrs: ["c.d"], refresh: false };
    const mapped = toRunnerJob(wire({ ...spec, ...options }), "https://o");
    expect(mapped.ok && mapped.value.planOptions).toEqual(options);
  });

  it("carries the names of a fork's withheld variables to the runner", () => {
    const withheld = [{ key: "PULUMI_BACKEND_URL", category: "env" as const }];
    const mapped = toRunnerJob(
      wire({ ...spec, isFork: true }, { variables: [], withheldVariables: withheld }),
      "https://o",
    );
    expect(mapped.ok && mapped.value).toMatchObject({
      isFork: true,
      variables: [],
      withheldVariables: withheld,
    });
  });

  it("maps a VCS configuration to a clone at the commit", () => {
    const vcs = {
      ...spec,
      configuration: {
        ...spec.configuration,
        source: "vcs",
        sha256: null,
        repoUrl: "git@h:o/r.git",
        commitSha: "f".repeat(40),
      },
    };
    const mapped = toRunnerJob(wire(vcs), "https://o");
    expect(mapped.ok && mapped.value.source).toEqual({
      kind: "vcs",
      repoUrl: "git@h:o/r.git",
      commitSha: "f".repeat(40),
    });
  });

  it("refuses a job it cannot run, with a reason for the run", () => {
    expect(toRunnerJob(wire(spec, { runToken: undefined }), "https://o")).toEqual({
      ok: false,
      reason: "the coordinator sent the job without a per-run token",
    });
    const unreadable = toRunnerJob(wire({ ...spec, engine: "cdktf" }), "https://o");
    expect(unreadable.ok === false && unreadable.reason).toMatch(/engine.*upgrade the agent/);
    const none = toRunnerJob(wire({ ...spec, configuration: null }), "https://o");
    expect(none).toEqual({ ok: false, reason: "the run has no configuration version" });
  });
});
