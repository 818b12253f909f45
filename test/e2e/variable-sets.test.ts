/**
 * Variable sets end to end: the real coordinator, the real `outpost-agent` and the stand-in
 * engine. A job's variables come from a global set, a project's set, a priority set and the
 * workspace itself; the test asserts what the engine received (its plan prints every variable,
 * its apply writes them into the state) and that the log carries sensitive values only masked.
 */
import { describe, expect, it } from "vitest";
import {
  ENGINE_VERSION,
  expectStatus,
  queueRun,
  readRunLog,
  setVariable,
  stateVersions,
  uploadConfiguration,
  waitForRun,
} from "./helpers/e2e.ts";
import { useWorld } from "./helpers/world.ts";

const world = useWorld({ agents: [{}] });

async function createSet(body: { name: string; global?: boolean; priority?: boolean }) {
  const set = await expectStatus(world.api("POST", "/api/v1/variable-sets", body), 201);
  return String(set.id);
}

async function setSetVariable(
  varsetId: string,
  key: string,
  value: string,
  options: { category: "env" | "terraform"; sensitive?: boolean },
) {
  const answer = await world.api("PUT", `/api/v1/variable-sets/${varsetId}/vars/${key}`, {
    value,
    category: options.category,
    sensitive: options.sensitive ?? false,
  });
  expect([200, 201], JSON.stringify(answer.body)).toContain(answer.status);
}

const TERRAFORM_VARS = ["region", "tag", "owner", "name", "password"] as const;

describe("a job's variables from variable sets", () => {
  it("receives the merge of a global, a project, a priority set and the workspace, masked", async () => {
    const password = "proj-Pa55word-0123456789";
    const cloudToken = "cloud-token-abcdef0123456789";

    const project = await expectStatus(
      world.api("POST", "/api/v1/projects", { name: "network-a" }),
      201,
    );
    const ws = await expectStatus(
      world.api("POST", "/api/v1/workspaces", {
        name: "app-a",
        projectId: project.id,
        engineVersion: ENGINE_VERSION,
        engine: "terraform",
        executionMode: "agent",
        poolId: world.poolId,
        autoApply: true,
      }),
      201,
    );
    const workspaceId = String(ws.id);

    const global = await createSet({ name: "org-defaults", global: true });
    await setSetVariable(global, "region", "global-region", { category: "terraform" });
    await setSetVariable(global, "tag", "global-tag", { category: "terraform" });
    await setSetVariable(global, "SHARED_ENV", "from-global", { category: "env" });

    const projectSet = await createSet({ name: "network-a-credentials" });
    await setSetVariable(projectSet, "tag", "project-tag", { category: "terraform" });
    await setSetVariable(projectSet, "password", password, {
      category: "terraform",
      sensitive: true,
    });
    await setSetVariable(projectSet, "CLOUD_TOKEN", cloudToken, {
      category: "env",
      sensitive: true,
    });
    await expectStatus(
      world.api("PUT", `/api/v1/variable-sets/${projectSet}/projects/${String(project.id)}`),
      200,
    );

    const prioritySet = await createSet({ name: "enforced-owner", priority: true });
    await setSetVariable(prioritySet, "owner", "platform-team", { category: "terraform" });
    await expectStatus(
      world.api("PUT", `/api/v1/variable-sets/${prioritySet}/workspaces/${workspaceId}`),
      200,
    );

    await setVariable(world, workspaceId, "owner", "workspace-owner", { category: "terraform" });
    await setVariable(world, workspaceId, "name", "workspace-name", { category: "terraform" });
    await setVariable(world, workspaceId, "STANDIN_PRINT_ENV", "SHARED_ENV,CLOUD_TOKEN", {
      category: "env",
    });

    const config = TERRAFORM_VARS.map(
      (v) =>
        `variable "${v}" {}\n# standin:print var.${v}\nresource "null_resource" "${v}" { value = var.${v} }\n`,
    ).join("");
    await uploadConfiguration(world, workspaceId, { "main.tf": config });

    // What the route says a run gets, with each value's source.
    const effective = await expectStatus(
      world.api("GET", `/api/v1/workspaces/${workspaceId}/effective-variables`),
      200,
    );
    const sources = Object.fromEntries(
      (
        effective.variables as { key: string; value: string | null; source: { name?: string } }[]
      ).map((v) => [v.key, { value: v.value, from: v.source.name ?? "workspace" }]),
    );
    expect(sources).toMatchObject({
      region: { value: "global-region", from: "org-defaults" },
      tag: { value: "project-tag", from: "network-a-credentials" },
      owner: { value: "platform-team", from: "enforced-owner" },
      name: { value: "workspace-name" },
      password: { value: null, from: "network-a-credentials" },
      CLOUD_TOKEN: { value: null, from: "network-a-credentials" },
      SHARED_ENV: { value: "from-global", from: "org-defaults" },
    });

    const runId = await queueRun(world, workspaceId, { operation: "apply" });
    const run = await waitForRun(world, runId, ["applied", "errored"], 60_000);
    expect(run.status, String(run.statusReason)).toBe("applied");

    const log = await readRunLog(world, runId, "plan");
    expect(log).toContain('var.region = "global-region"');
    expect(log).toContain('var.tag = "project-tag"');
    expect(log).toContain('var.owner = "platform-team"');
    expect(log).toContain('var.name = "workspace-name"');
    expect(log).toContain('env.SHARED_ENV = "from-global"');
    // The engine printed both secrets; the agent masked them before the log left it.
    expect(log).toContain('var.password = "***"');
    expect(log).toContain('env.CLOUD_TOKEN = "***"');
    expect(log).not.toContain(password);
    expect(log).not.toContain(cloudToken);
    expect(log).not.toContain("workspace-owner");
    expect(log).not.toContain("global-tag");

    // What the engine received, as its apply wrote it into the state.
    const [version] = await stateVersions(world, workspaceId);
    const download = await fetch(
      `${world.coordinator.url}/api/v1/workspaces/${workspaceId}/state-versions/${String(version?.id)}/download`,
      { headers: { authorization: `Bearer ${world.ownerToken}` } },
    );
    expect(download.status).toBe(200);
    const state = (await download.json()) as {
      resources: { name: string; instances: { attributes: { value: string } }[] }[];
    };
    const values = Object.fromEntries(
      state.resources.map((r) => [r.name, r.instances[0]?.attributes.value]),
    );
    expect(values).toEqual({
      region: "global-region",
      tag: "project-tag",
      owner: "platform-team",
      name: "workspace-name",
      password,
    });
  }, 180_000);
});
