/**
 * Pulumi stacks end to end: the real coordinator, the real agent, and the stand-in `pulumi`
 * installed from the loopback mirror as a Pulumi release tarball (resolved from `^3.150`).
 * The checkpoint lives in Outpost's state versions and is restored into a DIY backend per job.
 */
import { describe, expect, it } from "vitest";
import {
  ENGINE_VERSION,
  expectStatus,
  type Json,
  queueRun,
  readRunLog,
  setVariable,
  stateVersions,
  uploadConfiguration,
  waitForRun,
} from "./helpers/e2e.ts";
import { useWorld } from "./helpers/world.ts";

const world = useWorld({
  agents: [{ args: ["--concurrency", "2"] }],
  engines: { terraform: [ENGINE_VERSION], pulumi: ["3.150.0", "3.151.2"] },
});
const SECRET = "s3cret-token-value";

function project(resources: Record<string, string>): Record<string, string> {
  const body = Object.entries(resources)
    .map(
      ([name, value]) =>
        `  ${name}:\n    type: standin:index:Thing\n    properties:\n      value: "${value}"\n`,
    )
    .join("");
  return { "infra/Pulumi.yaml": `name: demo\nruntime: yaml\nresources:\n${body}` };
}

async function pulumiWorkspace(name: string, options: { passphrase?: boolean } = {}) {
  const ws = await expectStatus(
    world.api("POST", "/api/v1/workspaces", {
      name,
      engine: "pulumi",
      engineVersion: "^3.150",
      stackName: "dev",
      workingDirectory: "infra",
      executionMode: "agent",
      poolId: world.poolId,
    }),
    201,
  );
  const id = String(ws.id);
  if (options.passphrase ?? true) {
    await setVariable(world, id, "PULUMI_CONFIG_PASSPHRASE", "correct horse", {
      category: "env",
      sensitive: true,
    });
  }
  return id;
}

async function planned(runId: string): Promise<Json> {
  return waitForRun(world, runId, ["planned", "planned_and_finished", "errored"], 60_000);
}

async function confirm(runId: string): Promise<Json> {
  await expectStatus(world.api("POST", `/api/v1/runs/${runId}/confirm`), 200);
  return waitForRun(world, runId, ["applied", "errored"], 60_000);
}

function currentCheckpoint(ws: string): Promise<Json> {
  return expectStatus(world.api("GET", `/state/v1/${ws}`), 200);
}

function resources(checkpoint: Json): Json[] {
  const latest = (checkpoint.checkpoint as { latest: { resources: Json[] } }).latest;
  return latest.resources.filter((r) => r.custom === true);
}

describe("Pulumi stacks on the agent", () => {
  let ws = "";
  let firstVersion = "";

  it("previews, waits for confirmation, updates with the saved plan, and keeps the checkpoint", async () => {
    ws = await pulumiWorkspace("pulumi-flow");
    await setVariable(world, ws, "greeting", "hello", { category: "terraform" });
    await setVariable(world, ws, "token", SECRET, { category: "terraform", sensitive: true });
    await uploadConfiguration(
      world,
      ws,
      project({ first: `\${greeting} world`, second: `\${token}` }),
    );
    const runId = await queueRun(world, ws, { operation: "apply" });
    const run = await planned(runId);
    expect(run.status).toBe("planned");
    expect(run.planSummary).toMatchObject({ adds: 2, changes: 0, destroys: 0, sames: 1 });
    expect(await stateVersions(world, ws)).toHaveLength(0);
    const planLog = await readRunLog(world, runId, "plan");
    expect(planLog).toContain(
      `Using pulumi 3.151.2 (newest for "^3.150" in ${world.mirror.url}/pulumi/index.json)`,
    );
    expect(planLog).toContain("$ pulumi config set token --secret -s dev --non-interactive");
    expect(planLog).toContain("pulumi preview --json --save-plan");
    expect(planLog).toContain("+ urn:pulumi:dev::demo::standin:index:Thing::first (create)");
    expect(planLog).not.toContain(SECRET);

    const applied = await confirm(runId);
    expect(applied.status).toBe("applied");
    const applyLog = await readRunLog(world, runId, "apply");
    expect(applyLog).toContain("Outpost agent: plan file verified");
    expect(applyLog).toMatch(
      /\$ pulumi up --plan \S+ -s dev --yes --skip-preview --non-interactive/,
    );
    const versions = await stateVersions(world, ws);
    expect(versions).toHaveLength(1);
    expect(versions[0]).toMatchObject({ runId, serial: 1 });
    firstVersion = String(versions[0]?.id);
    const checkpoint = await currentCheckpoint(ws);
    expect(checkpoint).toMatchObject({ version: 3, serial: 1 });
    expect(resources(checkpoint).map((r) => (r.inputs as Json).value)).toEqual([
      "hello world",
      SECRET,
    ]);
  });

  it("refreshes: the preview shows the drift and the apply records it", async () => {
    await setVariable(world, ws, "STANDIN_PULUMI_DRIFT", "first=changed outside", {
      category: "env",
    });
    const runId = await queueRun(world, ws, { operation: "refresh" });
    expect(await planned(runId)).toMatchObject({ status: "planned", operation: "refresh" });
    expect(await readRunLog(world, runId, "plan")).toContain(
      "pulumi refresh --preview-only --json",
    );
    expect((await confirm(runId)).status).toBe("applied");
    expect(await readRunLog(world, runId, "apply")).toContain("$ pulumi refresh -s dev --yes");
    const [first] = resources(await currentCheckpoint(ws));
    expect(first?.outputs).toMatchObject({ value: "changed outside" });
    expect(await stateVersions(world, ws)).toHaveLength(2);
  });

  it("refreshes a Terraform workspace with a -refresh-only plan", async () => {
    const tf = await expectStatus(
      world.api("POST", "/api/v1/workspaces", {
        name: "tf-refresh",
        engineVersion: "1.9.5",
        executionMode: "agent",
        poolId: world.poolId,
      }),
      201,
    );
    await uploadConfiguration(world, String(tf.id), { "main.tf": "" });
    const runId = await queueRun(world, String(tf.id), { operation: "refresh" });
    expect(await planned(runId)).toMatchObject({ status: "planned_and_finished" });
    expect(await readRunLog(world, runId, "plan")).toContain("-refresh-only");
  });

  it("previews a pull request speculatively and writes no state", async () => {
    await uploadConfiguration(
      world,
      ws,
      project({ first: `\${greeting} world`, second: `\${token}`, third: "new" }),
    );
    const runId = await queueRun(world, ws, { operation: "plan" });
    const run = await waitForRun(world, runId, ["planned_and_finished", "errored"], 60_000);
    expect(run).toMatchObject({ status: "planned_and_finished", isSpeculative: true });
    expect(run.planSummary).toMatchObject({ adds: 1, hasChanges: true });
    expect(await stateVersions(world, ws)).toHaveLength(2);
  });

  it("destroys the stack after a destroy preview", async () => {
    const runId = await queueRun(world, ws, { operation: "destroy" });
    const run = await planned(runId);
    expect(run.planSummary).toMatchObject({ destroys: 2, adds: 0 });
    expect(await readRunLog(world, runId, "plan")).toContain(
      "pulumi destroy --preview-only --json",
    );
    expect((await confirm(runId)).status).toBe("applied");
    expect(resources(await currentCheckpoint(ws))).toEqual([]);
  });

  it("rolls back to an earlier checkpoint, which the next preview starts from", async () => {
    await expectStatus(
      world.api("POST", `/api/v1/workspaces/${ws}/state-versions/${firstVersion}/rollback`),
      201,
    );
    expect(resources(await currentCheckpoint(ws))).toHaveLength(2);
    await uploadConfiguration(
      world,
      ws,
      project({ first: `\${greeting} world`, second: `\${token}` }),
    );
    const runId = await queueRun(world, ws, { operation: "apply" });
    const run = await planned(runId);
    expect(run).toMatchObject({ status: "planned_and_finished" });
    expect(run.planSummary).toMatchObject({ hasChanges: false, sames: 3 });
  });

  it("refuses to start without PULUMI_CONFIG_PASSPHRASE, saying so", async () => {
    const bare = await pulumiWorkspace("pulumi-no-passphrase", { passphrase: false });
    await uploadConfiguration(world, bare, project({ first: "x" }));
    const run = await planned(await queueRun(world, bare, { operation: "apply" }));
    expect(run.status).toBe("errored");
    expect(String(run.statusReason)).toContain(
      "add PULUMI_CONFIG_PASSPHRASE as a sensitive env variable of the workspace",
    );
  });

  it("errors an update whose plan went stale, with the engine's reason", async () => {
    const stale = await pulumiWorkspace("pulumi-stale");
    await uploadConfiguration(world, stale, project({ first: "a" }));
    expect((await confirm(String((await planned(await queueRun(world, stale))).id))).status).toBe(
      "applied",
    );
    const [v1] = await stateVersions(world, stale);
    await uploadConfiguration(world, stale, project({ first: "a", second: "b" }));
    expect((await confirm(String((await planned(await queueRun(world, stale))).id))).status).toBe(
      "applied",
    );
    await uploadConfiguration(world, stale, project({ first: "a", second: "c" }));
    const runId = await queueRun(world, stale);
    expect((await planned(runId)).planSummary).toMatchObject({ changes: 1 });
    // The stack changes under the preview: an admin breaks the run's workspace lock and rolls
    // the state back to before `second` existed.
    await expectStatus(world.api("POST", `/api/v1/workspaces/${stale}/unlock?force=true`), 200);
    await expectStatus(
      world.api("POST", `/api/v1/workspaces/${stale}/state-versions/${String(v1?.id)}/rollback`),
      201,
    );
    const run = await confirm(runId);
    expect(run.status).toBe("errored");
    expect(String(run.statusReason)).toMatch(
      /pulumi up exited with code 1: resource urn:pulumi:dev::demo::standin:index:Thing::second violates plan: properties changed: ~\+value/,
    );
    expect(await stateVersions(world, stale)).toHaveLength(3);
  });
});
