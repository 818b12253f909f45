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
import { CountingProxy } from "../node/helpers/proxy.ts";
import {
  createWorkspace,
  ENGINE_VERSION,
  queueRun,
  readRunLog,
  uploadConfiguration,
  waitForRun,
} from "./helpers/e2e.ts";
import { exitWithin, writeHook } from "./helpers/processes.ts";
import { useWorld } from "./helpers/world.ts";

// The mirror's certificate comes from the world's test CA, which agents trust only with --ca-cert.
const world = useWorld({ httpsMirror: true });
const proxy = new CountingProxy();
let workspaceId = "";

beforeAll(async () => {
  await proxy.start();
  workspaceId = await createWorkspace(world, "behind-proxy");
  await uploadConfiguration(world, workspaceId, { "main.tf": 'resource "null_resource" "a" {}\n' });
});
afterAll(() => proxy.stop());

/** Runs one speculative plan with a `--single` agent; returns the run and the agent output. */
async function planWith(args: string[], env: Record<string, string>) {
  const dataDir = world.freshDir("proxy-agent");
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
  const agent = world.startAgent({
    dataDir,
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
      ["--ca-cert", world.ca.caFile, "--env-forward", "TFC_AGENT_TOKEN"],
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
    expect(proxy.tunnels).toContain(world.mirror.url.replace("https://", ""));
    // The mirror was reached only through the tunnel: the agent made no direct connection.
    // First the indexes the agent reads as it registers (the engine versions it reports).
    const indexes = world.mirror.requests.slice(0, 3);
    expect(indexes.sort()).toEqual([
      "/pulumi/index.json",
      "/terraform/index.json",
      "/tofu/index.json",
    ]);
    expect(world.mirror.requests.slice(3)).toEqual([
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
    const { run, log } = await planWith(
      ["--ca-cert", world.ca.caFile, "--forward-network-env=off"],
      {},
    );
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
