/**
 * Finding 4 (and the coordinator half of finding 2): a run queued through the API on a fork pull
 * request's configuration version lost the fork flag, became a non-speculative apply of unmerged
 * fork code and received every sensitive variable. Now the flag lives on the configuration
 * version, every run on it inherits it, a non-speculative run on a pull request's configuration
 * is refused, and the job spec carries the flag to the agent.
 */
import { describe, expect, it } from "vitest";
import { type ErrorBody, requestJson } from "../../worker/helpers/api.ts";
import { snapshotD1 } from "../../worker/helpers/d1-snapshot.ts";
import { seedOrg, type TestOrg } from "../../worker/helpers/fixtures.ts";
import { queueRun } from "../../worker/helpers/runs.ts";
import { BackendClient, stateJson } from "../../worker/helpers/state-fixtures.ts";
import {
  createHook,
  deliverGitHub,
  githubExample,
  type Json,
  randomSha,
} from "../../worker/helpers/vcs.ts";
import { producerWithState, readBackend, runnableWithAgent, shareState } from "./helpers.ts";

const REPO = "https://github.com/Codertocat/Hello-World.git";

/** GitHub's pull_request example, opened from a fork (another head repository). */
function forkPullRequest(sha: string, isFork = true): Json {
  const p = githubExample("pull_request", (e) => e.action === "opened");
  const pr = p.pull_request as Json;
  const head = pr.head as Json;
  head.sha = sha;
  if (isFork) {
    head.repo = { ...(head.repo as Json), id: 4242, fork: true };
  }
  return { ...p, number: 11, pull_request: { ...pr, number: 11 } };
}

async function setVariable(org: TestOrg, wsId: string, key: string, sensitive: boolean) {
  const res = await requestJson(`/api/v1/workspaces/${wsId}/vars/${key}`, {
    method: "PUT",
    token: org.tokens.admin,
    body: { value: `${key}-value`, category: "env", sensitive },
  });
  expect([200, 201]).toContain(res.status);
}

/** A workspace that plans fork pull requests without secrets, and one fork PR delivered to it. */
async function forkPlanned(isFork = true) {
  const org = await seedOrg();
  const hook = await createHook(org, "github");
  const target = await runnableWithAgent(org, {
    vcsRepoUrl: REPO,
    forkPullRequests: "plan_without_secrets",
  });
  await setVariable(org, target.workspace.id, "PLAIN", false);
  await setVariable(org, target.workspace.id, "AWS_SECRET_ACCESS_KEY", true);
  const delivered = await deliverGitHub(
    hook,
    "pull_request",
    forkPullRequest(randomSha(), isFork),
    {
      secret: hook.secret,
    },
  );
  expect(delivered.status).toBe(202);
  const versions = await requestJson<{
    configurationVersions: { id: string; isFork: boolean; isSpeculative: boolean }[];
  }>(`/api/v1/workspaces/${target.workspace.id}/configuration-versions`, {
    token: org.tokens.reader,
  });
  const cv = versions.body.configurationVersions[0];
  expect(cv).toMatchObject({ isFork, isSpeculative: true });
  return { org, target, cvId: cv?.id ?? "" };
}

describe("finding 4: fork code never reaches secrets or live state", () => {
  it("an apply queued through the API on a fork's configuration is refused (409), changing nothing", async () => {
    const { org, target, cvId } = await forkPlanned();
    const before = await snapshotD1();
    const res = await queueRun(org, target.workspace.id, {
      operation: "apply",
      configurationVersionId: cvId,
    });
    expect(res.status).toBe(409);
    expect((res.body as unknown as ErrorBody).error.message).toContain(
      "only a speculative plan may run on it",
    );
    expect(await snapshotD1()).toEqual(before);
  });

  it("a pull request's configuration from the same repository is refused for an apply too", async () => {
    const { org, target, cvId } = await forkPlanned(false);
    const res = await queueRun(org, target.workspace.id, {
      operation: "destroy",
      configurationVersionId: cvId,
    });
    expect(res.status).toBe(409);
  });

  it("a plan queued through the API on it inherits the flag: no secrets, the flag in the spec", async () => {
    const { org, target, cvId } = await forkPlanned();
    // The webhook's own plan holds the agent first; take it out of the way.
    const webhookJob = await target.agent.lease();
    await target.agent.start(webhookJob);
    await target.agent.finish(webhookJob, { outcome: "failed" });
    const res = await queueRun(org, target.workspace.id, {
      operation: "plan",
      configurationVersionId: cvId,
    });
    expect(res.status).toBe(201);
    expect(res.body.vcs).toMatchObject({ isFork: true });
    const job = await target.agent.lease();
    expect(job.runId).toBe(res.body.id);
    expect(job.spec).toMatchObject({ isFork: true, isSpeculative: true, planSha256: null });
    expect((job.variables ?? []).map((v) => v.key)).toEqual(["PLAIN"]);
    // The job hears what it lacks by name, never by value, so its engine can say why it stops.
    expect(job.withheldVariables).toEqual([{ key: "AWS_SECRET_ACCESS_KEY", category: "env" }]);
    expect(JSON.stringify(job)).not.toContain("AWS_SECRET_ACCESS_KEY-value");
  });

  it("a fork's job may lock its state but never write it, nor read shared outputs", async () => {
    const { org, target } = await forkPlanned();
    const producer = await producerWithState(org);
    await shareState(org, producer.id, "organization");
    const job = await target.agent.lease();
    await target.agent.start(job);
    const tf = new BackendClient(target.workspace.id, job.runToken ?? "");
    expect((await tf.lock()).status).toBe(200);
    const write = await tf.put(stateJson({ serial: 1, lineage: "fork" }));
    expect(write.status).toBe(403);
    expect(await write.text()).toContain("from a fork never writes state");
    expect((await readBackend(producer.id, job.runToken ?? "")).status).toBe(404);
  });
});
