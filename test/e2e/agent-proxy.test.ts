/**
 * The real agent behind a proxy with a private CA: every request it makes to the coordinator
 * (http, in absolute form) and to the engine mirror (https, a CONNECT tunnel) passes through a
 * loopback proxy that counts them; the mirror's certificate comes from a CA made at test time
 * and trusted with --ca-cert. Jobs get the proxy and the CA (unless turned off); without the CA
 * the run fails saying so.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MirrorServer } from "../node/helpers/mirror.ts";
import { CountingProxy } from "../node/helpers/proxy.ts";
import { makeTestCa, type TestCa } from "../node/helpers/tls.ts";
import {
  createWorkspace,
  ENGINE_VERSION,
  exitWithin,
  freshDir,
  queueRun,
  readRunLog,
  startAgent,
  startWorld,
  uploadConfiguration,
  type World,
  waitForRun,
  writeHook,
} from "./helpers/e2e.ts";

let world: World;
let ca: TestCa;
let proxy: CountingProxy;
let mirror: MirrorServer;
let workspaceId = "";

beforeAll(async () => {
  ca = await makeTestCa();
  mirror = new MirrorServer({ tls: { key: ca.key, cert: ca.cert } });
  proxy = new CountingProxy();
  [world] = await Promise.all([startWorld(), mirror.start(), proxy.start()]);
  mirror.signer = world.signer;
  mirror.publish("terraform", ENGINE_VERSION, {
    os: process.platform,
    arch: process.arch === "x64" ? "amd64" : process.arch,
  });
  workspaceId = await createWorkspace(world, "behind-proxy");
  await uploadConfiguration(world, workspaceId, { "main.tf": 'resource "null_resource" "a" {}\n' });
});
afterAll(async () => {
  await Promise.all([world?.close(), mirror?.stop(), proxy?.stop()]);
  await ca?.dispose();
});

/** Runs one speculative plan with a `--single` agent; returns the run and the agent output. */
async function planWith(args: string[], env: Record<string, string>) {
  const dataDir = freshDir(world, "proxy-agent");
  writeHook(
    dataDir,
    "pre-plan",
    [
      // biome-ignore lint/suspicious/noTemplateCurlyInString: sh parameter expansion
      'echo "job-proxy=${HTTPS_PROXY:-none} job-ca=${SSL_CERT_FILE:-none} git-ca=${GIT_SSL_CAINFO:-none}"',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: sh parameter expansion
      'echo "token-seen=${TFC_AGENT_TOKEN:-none}"',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: sh parameter expansion
      'if [ -n "${SSL_CERT_FILE:-}" ]; then grep -c "BEGIN CERTIFICATE" "$SSL_CERT_FILE" | sed "s/^/bundle-certs=/"; fi',
    ].join("\n"),
  );
  const runId = await queueRun(world, workspaceId, { operation: "plan", isSpeculative: true });
  const agent = startAgent(world, {
    dataDir,
    releaseMirror: mirror.url,
    args: ["--single", ...args],
    env: { HTTP_PROXY: proxy.url, HTTPS_PROXY: proxy.url, ...env },
  });
  const run = await waitForRun(world, runId, ["planned_and_finished", "errored"], 60_000);
  await exitWithin(agent, 30_000);
  return { run, log: await readRunLog(world, runId, "plan"), output: agent.output(), dataDir };
}

describe("behind a proxy, with a private CA", () => {
  it("sends every request through the proxy and trusts --ca-cert for the mirror", async () => {
    // The token also in TFC_AGENT_TOKEN, forwarded to jobs by name: it left the agent's
    // environment once read, so the job cannot see it.
    const { run, log, output, dataDir } = await planWith(
      ["--ca-cert", ca.caFile, "--env-forward", "TFC_AGENT_TOKEN"],
      { TFC_AGENT_TOKEN: world.agentToken },
    );
    expect(log).toContain("token-seen=none");
    expect(run.status, `${output}\n${log}`).toBe("planned_and_finished");
    const coordinator = (p: string) => `${world.coordinator.url}${p}`;
    expect(proxy.requests).toContain(`POST ${coordinator("/agent/v1/register")}`);
    expect(
      proxy.requests.some((r) => r.startsWith(`POST ${coordinator("/agent/v1/jobs/next")}`)),
    ).toBe(true);
    expect(proxy.requests.some((r) => r.includes("/start"))).toBe(true);
    expect(proxy.requests.some((r) => r.startsWith("PUT") && r.includes("/logs?offset="))).toBe(
      true,
    );
    expect(proxy.requests.some((r) => r.includes("/finish"))).toBe(true);
    expect(proxy.requests.some((r) => r.includes("/configuration"))).toBe(true);
    expect(proxy.tunnels).toContain(mirror.url.replace("https://", ""));
    // The mirror was reached only through the tunnel: the agent made no direct connection.
    expect(mirror.requests).toEqual([
      `/terraform/${ENGINE_VERSION}/terraform_${ENGINE_VERSION}_SHA256SUMS`,
      `/terraform/${ENGINE_VERSION}/terraform_${ENGINE_VERSION}_SHA256SUMS.sig`,
      expect.stringMatching(/\.zip$/),
    ]);
    const bundle = path.join(dataDir, "ca-certificates.pem");
    expect(existsSync(bundle)).toBe(true);
    expect(log).toContain(`job-proxy=${proxy.url} job-ca=${bundle} git-ca=${bundle}`);
    expect(Number(/bundle-certs=(\d+)/.exec(log)?.[1])).toBeGreaterThan(100);
  });

  it("keeps the proxy and CA out of jobs with --forward-network-env=off", async () => {
    const { run, log } = await planWith(["--ca-cert", ca.caFile, "--forward-network-env=off"], {});
    expect(run.status).toBe("planned_and_finished");
    expect(log).toContain("job-proxy=none job-ca=none git-ca=none");
  });

  it("fails the run saying the certificate is not trusted when the CA is not given", async () => {
    const { run, log } = await planWith([], {});
    expect(run.status).toBe("errored");
    expect(log).toMatch(
      /cannot install terraform .*TLS certificate not trusted.*--ca-cert.*\(1 attempt\)/,
    );
  });
});
