/**
 * A Pulumi stack driven from git: a signed GitHub push updates the stack, a pull request gets a
 * speculative preview that writes no state, and a fork's pull request gets no secrets (so no
 * passphrase, and its preview says why; nor a sensitive PULUMI_BACKEND_URL, and its preview is
 * refused saying that). The real coordinator, git server and agent.
 */
import { sign } from "@octokit/webhooks-methods";
import { describe, expect, it } from "vitest";
import {
  expectStatus,
  type Json,
  readRunLog,
  runsOf,
  setVariable,
  stateVersions,
  waitForRun,
} from "./helpers/e2e.ts";
import { useWorld } from "./helpers/world.ts";

const world = useWorld({ agents: [{}], git: true, engines: { pulumi: ["3.150.0"] } });

const program = (values: string[]) =>
  `name: demo\nruntime: yaml\nresources:\n${values
    .map(
      (v, i) => `  r${i}:\n    type: standin:index:Thing\n    properties:\n      value: "${v}"\n`,
    )
    .join("")}`;

async function deliver(hook: Json, event: string, payload: Json, id: string): Promise<number> {
  const body = JSON.stringify(payload);
  const res = await fetch(`${world.coordinator.url}/webhooks/github/${String(hook.id)}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": event,
      "x-github-delivery": id,
      "x-hub-signature-256": await sign(String(hook.secret), body),
    },
    body,
  });
  await res.body?.cancel();
  return res.status;
}

const repository = (repoUrl: string) => ({
  id: 1,
  full_name: "acme/infra",
  clone_url: repoUrl,
  default_branch: "main",
});

function pullRequest(repoUrl: string, sha: string, number: number, headRepoId: number): Json {
  return {
    action: "opened",
    number,
    pull_request: {
      title: "More things",
      user: { login: "octocat" },
      head: { ref: `feature-${number}`, sha, repo: { id: headRepoId } },
      base: { ref: "main", repo: { id: 1 } },
    },
    repository: repository(repoUrl),
  };
}

describe("a Pulumi stack from git", () => {
  it("updates on push, previews pull requests, and gives forks no secrets", async () => {
    const repo = world.git.createRepository("infra");
    const repoUrl = world.git.repoUrl("infra");
    const first = repo.commit({ "stack/Pulumi.yaml": program(["a"]) }, "One thing");
    const ws = String(
      (
        await expectStatus(
          world.api("POST", "/api/v1/workspaces", {
            name: "pulumi-git",
            engine: "pulumi",
            engineVersion: "3.150.0",
            stackName: "prod",
            workingDirectory: "stack",
            executionMode: "agent",
            poolId: world.poolId,
            autoApply: true,
            vcsRepoUrl: repoUrl,
            vcsBranch: "main",
            forkPullRequests: "plan_without_secrets",
          }),
          201,
        )
      ).id,
    );
    await setVariable(world, ws, "PULUMI_CONFIG_PASSPHRASE", "pass", {
      category: "env",
      sensitive: true,
    });
    const hook = await expectStatus(
      world.api("POST", "/api/v1/vcs-hooks", { provider: "github", repoUrl }),
      201,
    );

    const push = {
      ref: "refs/heads/main",
      after: first,
      commits: [
        {
          id: first,
          message: "One thing",
          added: ["stack/Pulumi.yaml"],
          removed: [],
          modified: [],
        },
      ],
      head_commit: { message: "One thing", author: { name: "octocat" } },
      repository: repository(repoUrl),
    };
    expect(await deliver(hook, "push", push, "push-1")).toBe(202);
    const [pushed] = await runsOf(world, ws, 1);
    const update = await waitForRun(world, String(pushed?.id), ["applied", "errored"], 60_000);
    expect(update).toMatchObject({ status: "applied", source: "github" });
    expect(await stateVersions(world, ws)).toHaveLength(1);

    const change = repo.commit({ "stack/Pulumi.yaml": program(["a", "b"]) }, "Two things");
    expect(await deliver(hook, "pull_request", pullRequest(repoUrl, change, 7, 1), "pr-7")).toBe(
      202,
    );
    const preview = (await runsOf(world, ws, 2)).find((r) => r.id !== pushed?.id);
    const planned = await waitForRun(
      world,
      String(preview?.id),
      ["planned_and_finished", "errored"],
      60_000,
    );
    expect(planned).toMatchObject({ status: "planned_and_finished", isSpeculative: true });
    expect(planned.vcs).toMatchObject({ pullRequestNumber: 7, commitSha: change, isFork: false });
    expect(planned.planSummary).toMatchObject({ adds: 1, sames: 2 });
    expect(await readRunLog(world, String(preview?.id), "plan")).toContain("pulumi preview --json");
    expect(await stateVersions(world, ws)).toHaveLength(1);

    expect(await deliver(hook, "pull_request", pullRequest(repoUrl, change, 8, 99), "pr-8")).toBe(
      202,
    );
    const forked = (await runsOf(world, ws, 3)).find(
      (r) => (r.vcs as Json).pullRequestNumber === 8,
    );
    const refused = await waitForRun(
      world,
      String(forked?.id),
      ["planned_and_finished", "errored"],
      60_000,
    );
    expect(refused).toMatchObject({ status: "errored", isSpeculative: true });
    expect(refused.vcs).toMatchObject({ isFork: true });
    expect(String(refused.statusReason)).toContain(
      "a pull request from a fork gets no sensitive variables",
    );
    expect(await stateVersions(world, ws)).toHaveLength(1);
  });
});

describe("a fork's pull request on a stack in the workspace's own, sensitive backend", () => {
  it("is refused naming the sensitive PULUMI_BACKEND_URL, not the passphrase", async () => {
    const repo = world.git.createRepository("infra-own");
    const repoUrl = world.git.repoUrl("infra-own");
    repo.commit({ "stack/Pulumi.yaml": program(["a"]) }, "One thing");
    const ws = String(
      (
        await expectStatus(
          world.api("POST", "/api/v1/workspaces", {
            name: "pulumi-own-backend",
            engine: "pulumi",
            engineVersion: "3.150.0",
            stackName: "acme/prod",
            workingDirectory: "stack",
            executionMode: "agent",
            poolId: world.poolId,
            vcsRepoUrl: repoUrl,
            vcsBranch: "main",
            forkPullRequests: "plan_without_secrets",
          }),
          201,
        )
      ).id,
    );
    // The URL names a bucket and carries its credentials, so the admin marked it sensitive.
    await setVariable(world, ws, "PULUMI_BACKEND_URL", "s3://state?access_key=AKIA-secret", {
      category: "env",
      sensitive: true,
    });
    const hook = await expectStatus(
      world.api("POST", "/api/v1/vcs-hooks", { provider: "github", repoUrl }),
      201,
    );
    const change = repo.commit({ "stack/Pulumi.yaml": program(["a", "b"]) }, "Two things");
    expect(await deliver(hook, "pull_request", pullRequest(repoUrl, change, 9, 99), "pr-9")).toBe(
      202,
    );
    const [forked] = await runsOf(world, ws, 1);
    const refused = await waitForRun(
      world,
      String(forked?.id),
      ["planned_and_finished", "errored"],
      60_000,
    );
    expect(refused).toMatchObject({ status: "errored", isSpeculative: true });
    expect(refused.vcs).toMatchObject({ isFork: true });
    const reason = String(refused.statusReason);
    expect(reason).toContain(
      "the workspace names its own backend in PULUMI_BACKEND_URL, a sensitive variable, and a pull request from a fork gets no sensitive variables",
    );
    expect(reason).not.toContain("PULUMI_CONFIG_PASSPHRASE");
    const log = await readRunLog(world, String(forked?.id), "plan");
    expect(log).toContain("its preview cannot reach the stack's backend");
    // Refused before anything ran: no engine command, and the secret never reached the job.
    expect(log).not.toContain("$ pulumi");
    expect(log).not.toContain("AKIA-secret");
  });
});
