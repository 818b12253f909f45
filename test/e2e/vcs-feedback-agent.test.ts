/**
 * VCS feedback in agent mode, end to end: the GitHub token exists only on the agent host (its
 * environment, and a token file named in its config file for a second host); the real
 * coordinator tells the real agent what to post and the agent posts it to the loopback GitHub
 * (`test/setup/fake-github.ts`, every request checked against `@octokit/openapi`): a push run's
 * statuses, a pull request's plan comment, and a 401 from the VCS shown on the run. The
 * coordinator never holds the token: not in its D1, R2 or Durable Objects, not in a job's
 * environment (a hook dumps it into the run log).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { sign } from "@octokit/webhooks-methods";
import { afterAll, describe, expect, inject, it } from "vitest";
import type { FakeGithubCall } from "../setup/fake-github.ts";
import {
  createWorkspace,
  expectStatus,
  type Json,
  readRunLog,
  runsOf,
  waitForRun,
} from "./helpers/e2e.ts";
import { writeHook } from "./helpers/processes.ts";
import { useWorld } from "./helpers/world.ts";

const fake = inject("fakeGithubUrl");
const port = new URL(fake).port;
/** The same loopback GitHub under a second host name, for which the agent holds a bad token. */
const otherApi = `http://localhost:${port}`;
const goodToken = `agent-${crypto.randomUUID()}`;
const badToken = `bad-${crypto.randomUUID()}`;
const secretsDir = mkdtempSync(path.join(tmpdir(), "outpost-vcs-tokens-"));
afterAll(() => rmSync(secretsDir, { recursive: true, force: true }));

const world = useWorld(() => {
  const badFile = path.join(secretsDir, "localhost-token");
  writeFileSync(badFile, `${badToken}\n`, { mode: 0o600 });
  const config = path.join(secretsDir, "agent.yaml");
  writeFileSync(config, `vcsTokens:\n  "localhost:${port}":\n    tokenFile: ${badFile}\n`);
  return {
    git: true,
    vars: { VCS_ALLOW_LOOPBACK: "true" },
    agents: [
      {
        env: {
          OUTPOST_GITHUB_TOKEN: goodToken,
          OUTPOST_GITHUB_HOST: `127.0.0.1:${port}`,
          OUTPOST_CONFIG: config,
        },
      },
    ],
  };
});

const resource = (name: string) => `resource "null_resource" "${name}" { value = "${name}" }\n`;

async function deliver(hook: Json, event: string, payload: Json): Promise<number> {
  const body = JSON.stringify(payload);
  const res = await fetch(`${world.coordinator.url}/webhooks/github/${String(hook.id)}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": event,
      "x-github-delivery": crypto.randomUUID(),
      "x-hub-signature-256": await sign(String(hook.secret), body),
    },
    body,
  });
  await res.body?.cancel();
  return res.status;
}

const repository = (repoUrl: string, name: string) => ({
  id: 1,
  full_name: name,
  clone_url: repoUrl,
  default_branch: "main",
});

function push(repoUrl: string, name: string, sha: string): Json {
  return {
    ref: "refs/heads/main",
    after: sha,
    commits: [{ id: sha, message: "Add a", added: ["main.tf"], removed: [], modified: [] }],
    head_commit: { message: "Add a", author: { name: "octocat" } },
    repository: repository(repoUrl, name),
  };
}

function pullRequest(repoUrl: string, name: string, sha: string, number: number): Json {
  return {
    action: "opened",
    number,
    pull_request: {
      title: "More",
      user: { login: "octocat" },
      head: { ref: `feature-${number}`, sha, repo: { id: 1 } },
      base: { ref: "main", repo: { id: 1 } },
    },
    repository: repository(repoUrl, name),
  };
}

async function calls(token: string): Promise<FakeGithubCall[]> {
  return (await (
    await fetch(`${fake}/_calls/${encodeURIComponent(token)}`)
  ).json()) as FakeGithubCall[];
}

/** A workspace on a new repository of the git server, and an agent-mode hook posting to `apiUrl`. */
async function setUp(name: string, apiUrl: string) {
  const repo = world.git.createRepository(`acme/${name}`);
  const repoUrl = world.git.repoUrl(`acme/${name}`);
  const ws = await createWorkspace(world, name, { autoApply: true });
  await expectStatus(
    world.api("PATCH", `/api/v1/workspaces/${ws}`, { vcsRepoUrl: repoUrl, vcsBranch: "main" }),
    200,
  );
  const hook = await expectStatus(
    world.api("POST", "/api/v1/vcs-hooks", {
      provider: "github",
      repoUrl,
      feedback: "agent",
      apiUrl,
    }),
    201,
  );
  expect(hook).toMatchObject({ feedback: "agent", hasToken: false });
  return { repo, repoUrl, ws, hook };
}

/** Every file under `dir`, read as bytes (D1's SQLite files, R2 blobs, Durable Object storage). */
function everyFile(dir: string): Buffer[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .map((entry) => path.join(dir, entry))
    .filter((file) => statSync(file).isFile())
    .map((file) => readFileSync(file));
}

describe("VCS feedback posted by the agent, the token only on the agent host", () => {
  it("posts a push run's statuses and a pull request's plan comment, and the token stays on the agent", async () => {
    const { repo, repoUrl, ws, hook } = await setUp("fb-infra", fake);
    const tokenFile = path.join(secretsDir, "localhost-token");
    const hookDump = [
      'if [ "$OUTPOST_WORKSPACE_NAME" = "fb-infra" ]; then',
      '  echo "job env:"; env',
      `  cat ${tokenFile} || echo "the VCS token file is hidden"`,
      "fi",
    ].join("\n");
    writeHook(world.agent.dataDir, "pre-plan", hookDump);

    const first = repo.commit({ "main.tf": resource("a") }, "Add a");
    expect(await deliver(hook, "push", push(repoUrl, "acme/fb-infra", first))).toBe(202);
    const [queued] = await runsOf(world, ws, 1);
    const run = await waitForRun(world, String(queued?.id), ["applied", "errored"], 60_000);
    expect(run.status).toBe("applied");
    const statuses = async () =>
      (await calls(goodToken)).filter((c) => c.template === "/repos/{owner}/{repo}/statuses/{sha}");
    await expect
      .poll(async () => (await statuses()).map((c) => (c.body as Json).description), {
        timeout: 30_000,
      })
      .toContain("Applied. Plan: 1 to add, 0 to change, 0 to destroy");
    const made = await statuses();
    expect(made.flatMap((c) => c.violations)).toEqual([]);
    for (const call of made) {
      expect(call).toMatchObject({ path: `/repos/acme/fb-infra/statuses/${first}`, status: 201 });
      expect(call.body).toMatchObject({
        context: "outpost/fb-infra",
        target_url: expect.stringContaining(`/ui/runs/${String(run.id)}`),
      });
    }
    expect(made.at(-1)?.body).toMatchObject({ state: "success" });
    await expect
      .poll(async () => {
        const shown = await expectStatus(world.api("GET", `/api/v1/runs/${String(run.id)}`), 200);
        return shown.vcsFeedback;
      })
      .toMatchObject([{ kind: "status", posted: true, error: null, state: "success" }]);

    const change = repo.commit({ "main.tf": resource("a") + resource("b") }, "Add b");
    expect(
      await deliver(hook, "pull_request", pullRequest(repoUrl, "acme/fb-infra", change, 12)),
    ).toBe(202);
    const plan = (await runsOf(world, ws, 2)).find((r) => r.id !== run.id);
    await waitForRun(world, String(plan?.id), ["planned_and_finished", "errored"], 60_000);
    const commentsPath = "/repos/acme/fb-infra/issues/12/comments";
    await expect
      .poll(
        async () =>
          (await calls(goodToken)).filter((c) => c.method === "POST" && c.path === commentsPath),
        { timeout: 30_000 },
      )
      .toHaveLength(1);
    const comment = (await calls(goodToken)).find(
      (c) => c.method === "POST" && c.path === commentsPath,
    );
    const body = String((comment?.body as Json | undefined)?.body);
    expect(body).toContain(`<!-- outpost:plan:${ws} -->`);
    expect(body).toContain("Plan: 1 to add, 0 to change, 0 to destroy");
    expect(body).toContain(change.slice(0, 12));
    await expect
      .poll(async () => (await statuses()).some((c) => c.path.endsWith(change)), {
        timeout: 30_000,
      })
      .toBe(true);

    // The token never reached the coordinator nor the job.
    const log = await readRunLog(world, String(run.id), "plan");
    expect(log).toContain("job env:");
    expect(log).toContain("the VCS token file is hidden");
    expect(log).not.toContain(badToken);
    expect(log).not.toContain(goodToken);
    expect(log).not.toContain("OUTPOST_GITHUB_TOKEN");
    for (const bytes of everyFile(world.coordinator.persistDir)) {
      expect(bytes.includes(goodToken)).toBe(false);
      expect(bytes.includes(badToken)).toBe(false);
    }
  });

  it("shows a 401 from the VCS on the run, and the run still applies", async () => {
    const { repo, repoUrl, ws, hook } = await setUp("fb-refused", otherApi);
    const sha = repo.commit({ "main.tf": resource("a") }, "Add a");
    expect(await deliver(hook, "push", push(repoUrl, "acme/fb-refused", sha))).toBe(202);
    const [queued] = await runsOf(world, ws, 1);
    await expect
      .poll(
        async () => {
          const shown = await expectStatus(
            world.api("GET", `/api/v1/runs/${String(queued?.id)}`),
            200,
          );
          return shown.vcsFeedback;
        },
        { timeout: 30_000 },
      )
      .toMatchObject([
        {
          kind: "status",
          posted: false,
          error: `status not posted: 401 Bad credentials from localhost:${port}`,
        },
      ]);
    const run = await waitForRun(world, String(queued?.id), ["applied", "errored"], 60_000);
    expect(run.status).toBe("applied");
    expect((await calls(badToken)).every((c) => c.status === 401)).toBe(true);
  });
});
