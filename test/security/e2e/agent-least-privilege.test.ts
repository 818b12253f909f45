/**
 * The least-privilege findings through the real coordinator and the real `outpost-agent`
 * process (with the stand-in engine and a real git server):
 * - finding 1: a job's `terraform_remote_state` gets another workspace's outputs only once that
 *   workspace shares them;
 * - findings 2 and 4: a fork pull request's plan gets no allowlisted host variables, no
 *   sensitive values and no hooks, while a same-repository pull request gets all three;
 * - finding 3: the apply refuses a plan file whose SHA-256 is not the one recorded at plan time,
 *   and the run ends errored saying so;
 * - finding 8: what a hook exports as sensitive, and a sensitive value's encodings, are masked.
 */
import { execFile } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";
import { promisify } from "node:util";
import { sign } from "@octokit/webhooks-methods";
import { beforeAll, describe, expect, it } from "vitest";
import {
  createWorkspace,
  expectStatus,
  type Json,
  queueRun,
  readRunLog,
  runsOf,
  setVariable,
  stateVersions,
  uploadConfiguration,
  waitForRun,
} from "../../e2e/helpers/e2e.ts";
import { writeHook } from "../../e2e/helpers/processes.ts";
import { useWorld } from "../../e2e/helpers/world.ts";

const run = promisify(execFile);
const WRANGLER = path.resolve(
  import.meta.dirname,
  "../../../node_modules/wrangler/bin/wrangler.js",
);
const HOST_SECRET = "host-aws-secret-4e5f6a7b";
const DB_TOKEN = "db-token-Pq7rS8tU9vW0";
const HOOK_CREDENTIAL = "hook-issued-credential-Lm3N";

const world = useWorld({
  agents: [{ args: ["--env-forward", "AWS_*"], env: { AWS_SECRET_ACCESS_KEY: HOST_SECRET } }],
  git: true,
});

beforeAll(() => {
  // What a platform team's hook does: fetch a credential, print a trace, export it as sensitive.
  writeHook(
    world.agent.dataDir,
    "pre-plan",
    [
      'echo "pre-plan hook ran"',
      `echo "issued ${HOOK_CREDENTIAL}"`,
      'printf "db token b64: %s\\n" "$(printf %s "$DB_TOKEN" | base64)"',
      'printf "db token hex: %s\\n" "$(printf %s "$DB_TOKEN" | od -An -tx1 | tr -d " \\n")"',
      `echo "sensitive HOOK_CREDENTIAL=${HOOK_CREDENTIAL}" >> "$OUTPOST_AGENT_ENV"`,
    ].join("\n"),
  );
});

const examples = createRequire(import.meta.url)("@octokit/webhooks-examples") as {
  name: string;
  examples: Json[];
}[];

/** GitHub's pull_request example at `sha`, from a fork of the repository or from itself. */
function pullRequest(repoUrl: string, sha: string, number: number, isFork: boolean): Json {
  const example = examples
    .find((d) => d.name === "pull_request")
    ?.examples.find((e) => e.action === "opened");
  const p = structuredClone(example) as Json;
  const pr = p.pull_request as Json;
  const head = pr.head as Json;
  const base = pr.base as Json;
  head.sha = sha;
  base.ref = "main";
  head.repo = { ...(head.repo as Json), id: isFork ? 4242 : (base.repo as Json).id };
  return {
    ...p,
    number,
    pull_request: { ...pr, number },
    repository: { ...(p.repository as Json), clone_url: repoUrl, default_branch: "main" },
  };
}

async function deliver(hook: Json, payload: Json, deliveryId: string) {
  const body = JSON.stringify(payload);
  const res = await fetch(`${world.coordinator.url}/webhooks/github/${String(hook.id)}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": "pull_request",
      "x-github-delivery": deliveryId,
      "x-hub-signature-256": await sign(String(hook.secret), body),
    },
    body,
  });
  expect(res.status).toBe(202);
}

/** The workspace's newest run once it has `count` (bounded). */
async function newestRun(workspaceId: string, count: number): Promise<Json> {
  const [newest] = await runsOf(world, workspaceId, count);
  return newest ?? {};
}

describe("findings 2, 4 and 8 with the real agent: fork code never reaches secrets", () => {
  it("a same-repository pull request gets host variables, secrets (masked) and hooks; a fork's gets none", async () => {
    const repo = world.git.createRepository("infra");
    const repoUrl = world.git.repoUrl("infra");
    const main = 'resource "null_resource" "web" { value = "pr" }\n';
    const ws = await createWorkspace(world, "pr-target", {
      env: { STANDIN_PRINT_ENV: "AWS_SECRET_ACCESS_KEY,DB_TOKEN,HOOK_CREDENTIAL" },
    });
    await setVariable(world, ws, "DB_TOKEN", DB_TOKEN, { category: "env", sensitive: true });
    await expectStatus(
      world.api("PATCH", `/api/v1/workspaces/${ws}`, {
        vcsRepoUrl: repoUrl,
        vcsBranch: "main",
        forkPullRequests: "plan_without_secrets",
      }),
      200,
    );
    const hook = await expectStatus(
      world.api("POST", "/api/v1/vcs-hooks", { provider: "github", repoUrl }),
      201,
    );

    await deliver(
      hook,
      pullRequest(repoUrl, repo.commit({ "main.tf": main }, "PR"), 1, false),
      "pr-1",
    );
    const own = await waitForRun(
      world,
      String((await newestRun(ws, 1)).id),
      ["planned_and_finished", "errored"],
      60_000,
    );
    expect(own.status).toBe("planned_and_finished");
    const ownLog = await readRunLog(world, String(own.id), "plan");
    expect(ownLog).toContain(`env.AWS_SECRET_ACCESS_KEY = "${HOST_SECRET}"`);
    expect(ownLog).toContain("pre-plan hook ran");
    expect(ownLog).toContain('env.DB_TOKEN = "***"');
    expect(ownLog).toContain("issued ***");
    expect(ownLog).toContain('env.HOOK_CREDENTIAL = "***"');
    expect(ownLog).toContain("db token b64: ***");
    expect(ownLog).toContain("db token hex: ***");
    for (const secret of [DB_TOKEN, HOOK_CREDENTIAL, Buffer.from(DB_TOKEN).toString("hex")]) {
      expect(ownLog).not.toContain(secret);
    }

    const forkSha = repo.commit({ "main.tf": main.replace("pr", "fork") }, "fork PR");
    await deliver(hook, pullRequest(repoUrl, forkSha, 2, true), "pr-2");
    const fork = await waitForRun(
      world,
      String((await newestRun(ws, 2)).id),
      ["planned_and_finished", "errored"],
      60_000,
    );
    expect(fork).toMatchObject({ status: "planned_and_finished", isSpeculative: true });
    expect(fork.vcs).toMatchObject({ isFork: true, commitSha: forkSha });
    const forkLog = await readRunLog(world, String(fork.id), "plan");
    expect(forkLog).toContain("env.AWS_SECRET_ACCESS_KEY = null");
    expect(forkLog).toContain("env.DB_TOKEN = null");
    expect(forkLog).toContain("env.HOOK_CREDENTIAL = null");
    expect(forkLog).toContain("Skipping the pre-plan hook");
    expect(forkLog).not.toContain("pre-plan hook ran");
    expect(forkLog).not.toContain(HOST_SECRET);

    // Finding 4: the fork's configuration cannot be applied through the API.
    const refused = await world.api("POST", `/api/v1/workspaces/${ws}/runs`, {
      operation: "apply",
      configurationVersionId: fork.configurationVersionId,
    });
    expect(refused.status).toBe(409);
  });
});

describe("finding 3 with the real agent: the plan that is confirmed is the plan that is applied", () => {
  it("an apply whose plan file differs from the recorded hash errors, applying nothing", async () => {
    const ws = await createWorkspace(world, "plan-hash");
    await uploadConfiguration(world, ws, {
      "main.tf": 'resource "null_resource" "a" { value = "one" }\n',
    });
    const runId = await queueRun(world, ws, { operation: "apply" });
    const planned = await waitForRun(world, runId, ["planned", "errored"], 60_000);
    expect(planned.status).toBe("planned");
    expect(String(planned.planSha256)).toMatch(/^[0-9a-f]{64}$/);
    // Whatever swapped the bytes (a stolen token before this change, a storage incident): the
    // record and the stored plan now disagree.
    await run(
      process.execPath,
      [
        WRANGLER,
        "d1",
        "execute",
        "DB",
        "--local",
        "--persist-to",
        world.coordinator.persistDir,
        "--command",
        `UPDATE runs SET plan_sha256 = '${"0".repeat(64)}' WHERE id = '${runId}'`,
      ],
      { cwd: path.resolve(import.meta.dirname, "../../.."), env: { ...process.env, CI: "true" } },
    );
    await expectStatus(world.api("POST", `/api/v1/runs/${runId}/confirm`), 200);
    const errored = await waitForRun(world, runId, ["errored", "applied"], 60_000);
    expect(errored.status).toBe("errored");
    expect(String(errored.statusReason)).toContain(
      "refusing to apply a plan that is not the one confirmed",
    );
    expect(await readRunLog(world, runId, "apply")).not.toContain("$ terraform apply");
    expect(await stateVersions(world, ws)).toHaveLength(0);

    const again = await queueRun(world, ws, { operation: "apply" });
    await waitForRun(world, again, ["planned"], 60_000);
    await expectStatus(world.api("POST", `/api/v1/runs/${again}/confirm`), 200);
    const applied = await waitForRun(world, again, ["applied", "errored"], 60_000);
    expect(applied.status).toBe("applied");
    expect(await readRunLog(world, again, "apply")).toContain(
      `plan file verified (SHA-256 ${String(applied.planSha256)})`,
    );
  });
});

describe("finding 1 with the real agent: terraform_remote_state reads outputs only, opt-in", () => {
  it("a job sees another workspace's outputs only once it shares them, sensitive ones marked", async () => {
    const producer = await expectStatus(
      world.api("POST", "/api/v1/workspaces", { name: "network", engineVersion: "1.9.5" }),
      201,
    );
    const producerId = String(producer.id);
    const state = {
      version: 4,
      terraform_version: "1.9.5",
      serial: 1,
      lineage: "network-lineage",
      outputs: {
        vpc_id: { value: "vpc-42", type: "string" },
        db_password: { value: "producer-secret-x1", type: "string", sensitive: true },
      },
      resources: [],
    };
    await expectStatus(world.api("POST", `/state/v1/${producerId}`, state), 200);
    const consumer = await createWorkspace(world, "app");
    await uploadConfiguration(world, consumer, {
      "main.tf": `data "terraform_remote_state" "network" {\n  backend = "http"\n  config = {\n    address = "${world.coordinator.url}/state/v1/${producerId}"\n  }\n}\n`,
    });
    const plan = async () => {
      const id = await queueRun(world, consumer, { operation: "plan" });
      const done = await waitForRun(world, id, ["planned_and_finished", "errored"], 60_000);
      return readRunLog(world, String(done.id), "plan");
    };
    expect(await plan()).toContain("data.terraform_remote_state.network.outputs = {}");
    await expectStatus(
      world.api("PATCH", `/api/v1/workspaces/${producerId}`, {
        remoteStateSharing: "workspaces",
        remoteStateConsumerIds: [consumer],
      }),
      200,
    );
    expect(await plan()).toContain(
      'data.terraform_remote_state.network.outputs = {"vpc_id":"vpc-42","db_password":"(sensitive value)"}',
    );
  });
});
