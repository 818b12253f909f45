/**
 * VCS end to end: a real git repository served over HTTPS on loopback by `git http-backend`
 * (basic auth, self-signed certificate), the real coordinator, a signed GitHub push webhook,
 * and the real agent process cloning the exact commit with credentials that exist only in its
 * own environment, then applying with the stand-in engine.
 */
import { createRequire } from "node:module";
import { sign } from "@octokit/webhooks-methods";
import { describe, expect, it } from "vitest";
import {
  createWorkspace,
  expectStatus,
  type Json,
  readRunLog,
  runsOf,
  stateVersions,
  waitForRun,
} from "./helpers/e2e.ts";
import { useWorld } from "./helpers/world.ts";

const world = useWorld({ agents: [{}], git: true });

// The package is a JSON index; Node loads it with require.
const examples = createRequire(import.meta.url)("@octokit/webhooks-examples") as {
  name: string;
  examples: Json[];
}[];

const resource = (name: string) => `resource "null_resource" "${name}" { value = "${name}" }\n`;

/** GitHub's own push example, pointed at the loopback repository and the pushed commit. */
function pushPayload(repoUrl: string, sha: string, files: string[], message: string): Json {
  const definition = examples.find((d) => d.name === "push");
  const example = (definition?.examples ?? []).find((e) => e.ref === "refs/heads/master");
  const p = structuredClone(example) as Json;
  const commit = { ...((p.commits as Json[])[0] as Json), id: sha, message, modified: files };
  return {
    ...p,
    ref: "refs/heads/main",
    after: sha,
    commits: [commit],
    head_commit: commit,
    repository: { ...(p.repository as Json), clone_url: repoUrl, default_branch: "main" },
  };
}

async function postWebhook(hookId: string, secret: string, payload: Json, deliveryId: string) {
  const body = JSON.stringify(payload);
  const started = Date.now();
  const res = await fetch(`${world.coordinator.url}/webhooks/github/${hookId}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": "push",
      "x-github-delivery": deliveryId,
      "x-hub-signature-256": await sign(secret, body),
    },
    body,
  });
  return { status: res.status, body: (await res.json()) as Json, ms: Date.now() - started };
}

describe("VCS-driven runs through the real coordinator, git server and agent", () => {
  it("refuses file:// and option-like repository URLs on the coordinator", async () => {
    const ws = await createWorkspace(world, "vcs-refused");
    for (const url of ["file:///srv/repo.git", "-u/evil", "http://127.0.0.1/x.git"]) {
      const res = await world.api("PATCH", `/api/v1/workspaces/${ws}`, { vcsRepoUrl: url });
      expect(res.status, url).toBe(400);
    }
  });

  it("a signed push queues a run; the agent clones exactly that commit and applies it", async () => {
    const repo = world.git.createRepository("infra");
    const repoUrl = world.git.repoUrl("infra");
    const first = repo.commit({ "envs/prod/main.tf": resource("a") }, "Add resource a");
    // The branch moves on before the first webhook is handled: the run must still use `first`.
    const second = repo.commit({ "envs/prod/main.tf": resource("a") + resource("b") }, "Add b");

    const ws = await createWorkspace(world, "vcs-prod", { autoApply: true });
    await expectStatus(
      world.api("PATCH", `/api/v1/workspaces/${ws}`, {
        vcsRepoUrl: repoUrl,
        vcsBranch: "main",
        workingDirectory: "envs/prod",
      }),
      200,
    );
    const hook = await expectStatus(
      world.api("POST", "/api/v1/vcs-hooks", { provider: "github", repoUrl }),
      201,
    );

    const answer = await postWebhook(
      String(hook.id),
      String(hook.secret),
      pushPayload(repoUrl, first, ["envs/prod/main.tf"], "Add resource a"),
      "e2e-delivery-1",
    );
    expect(answer.status).toBe(202);
    // Well inside the 10 s GitHub gives a delivery: the runs are queued after the answer. (1 s
    // held on an idle host; a loaded two-core host has taken over 2 s.)
    expect(answer.ms).toBeLessThan(5_000);

    const [queued] = await runsOf(world, ws, 1);
    const run = await waitForRun(
      world,
      String(queued?.id),
      ["applied", "errored", "canceled"],
      60_000,
    );
    expect(run).toMatchObject({ status: "applied", source: "github", message: "Add resource a" });
    expect(run.vcs).toMatchObject({
      commitSha: first,
      branch: "main",
      commitMessage: "Add resource a",
    });
    expect(run.planSummary).toMatchObject({ adds: 1 });
    const planLog = await readRunLog(world, String(run.id), "plan");
    expect(planLog).toContain(`Cloning ${repoUrl} at ${first}`);
    expect(planLog).not.toContain(world.git.password);
    expect(JSON.stringify(run)).not.toContain(world.git.password);
    // The agent authenticated with the host's credential helper; the coordinator never did.
    expect(world.git.requests.some((r) => r.authorized && r.path.startsWith("/infra.git/"))).toBe(
      true,
    );

    // A redelivery of the same delivery creates nothing new.
    const replay = await postWebhook(
      String(hook.id),
      String(hook.secret),
      pushPayload(repoUrl, first, ["envs/prod/main.tf"], "Add resource a"),
      "e2e-delivery-1",
    );
    expect(replay).toMatchObject({ status: 200, body: { duplicate: true } });

    const next = await postWebhook(
      String(hook.id),
      String(hook.secret),
      pushPayload(repoUrl, second, ["envs/prod/main.tf"], "Add b"),
      "e2e-delivery-2",
    );
    expect(next.status).toBe(202);
    const runs = await runsOf(world, ws, 2);
    expect(runs).toHaveLength(2);
    const secondRun = runs.find((r) => r.id !== run.id);
    const applied = await waitForRun(world, String(secondRun?.id), ["applied", "errored"], 60_000);
    expect(applied.vcs).toMatchObject({ commitSha: second });
    expect(applied.planSummary).toMatchObject({ adds: 1 });
    expect((await stateVersions(world, ws)).length).toBeGreaterThanOrEqual(2);

    const byCommit = await expectStatus(world.api("GET", `/api/v1/runs?commitSha=${second}`), 200);
    expect((byCommit.runs as Json[]).map((r) => r.id)).toEqual([applied.id]);
  });
});
