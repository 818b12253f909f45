/**
 * Drift detection end to end: the real coordinator, the real agent process, and the stand-in
 * terraform, whose objects are changed "outside Terraform" through `STANDIN_DRIFT`. An
 * assessment runs `plan -refresh-only -detailed-exitcode`, the agent reads the drifted addresses
 * from the saved plan's JSON (`resource_drift`), and nothing writes state.
 */
import { describe, expect, it, vi } from "vitest";
import {
  createWorkspace,
  expectStatus,
  type Json,
  queueRun,
  readRunLog,
  setVariable,
  stateVersions,
  uploadConfiguration,
  waitForRun,
} from "./helpers/e2e.ts";
import { runCli } from "./helpers/processes.ts";
import { useWorld } from "./helpers/world.ts";

const world = useWorld({ agents: [{ args: ["--concurrency", "2"] }] });

/** Polls the workspace's assessment `id` until it is no longer pending (bounded). */
async function settledAssessment(workspaceId: string, id: string, timeoutMs = 30_000) {
  return vi.waitFor(
    async () => {
      const page = await expectStatus(
        world.api("GET", `/api/v1/workspaces/${workspaceId}/assessments`),
        200,
      );
      const found = ((page.assessments as Json[]) ?? []).find((a) => a.id === id) ?? {};
      expect(found.status, `assessment ${id}`).toBeDefined();
      expect(found.status, `assessment ${id}`).not.toBe("pending");
      return found;
    },
    { timeout: timeoutMs, interval: 150 },
  );
}

async function assess(workspaceId: string): Promise<Json> {
  const started = await expectStatus(
    world.api("POST", `/api/v1/workspaces/${workspaceId}/assessments`),
    201,
  );
  return settledAssessment(workspaceId, String(started.id));
}

/** The outpost CLI against the world's coordinator, as the owner (bounded in time). */
async function cli(args: string[]): Promise<string> {
  const result = await runCli(args, {
    home: world.dir,
    env: { OUTPOST_ADDRESS: world.coordinator.url, OUTPOST_TOKEN: world.ownerToken },
    timeoutMs: 30_000,
  });
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
}

async function driftStatus(workspaceId: string): Promise<unknown> {
  const ws = await expectStatus(world.api("GET", `/api/v1/workspaces/${workspaceId}`), 200);
  return ws.driftStatus;
}

describe("assessments through the real agent", () => {
  it("finds no drift, then the drift made outside Terraform, writing no state", async () => {
    const ws = await createWorkspace(world, "drifting", { autoApply: true });
    await uploadConfiguration(world, ws, {
      "main.tf": 'resource "null_resource" "a" { value = "one" }\n',
    });
    const applied = await waitForRun(world, await queueRun(world, ws), ["applied", "errored"]);
    expect(applied.status).toBe("applied");
    expect(await stateVersions(world, ws)).toHaveLength(1);

    const clean = await assess(ws);
    expect(clean).toMatchObject({ status: "no_drift", driftedResources: [] });
    expect(await driftStatus(ws)).toBe("no_drift");
    const cleanRun = await waitForRun(world, String(clean.runId), ["planned_and_finished"]);
    expect(cleanRun).toMatchObject({
      operation: "refresh",
      isSpeculative: true,
      source: "assessment",
    });
    const log = await readRunLog(world, String(clean.runId), "plan");
    expect(log).toContain("$ terraform plan -out=plan.tfplan -input=false -detailed-exitcode");
    expect(log).toMatch(/-refresh-only -lock=false/);
    expect(log).toContain("No changes. Your infrastructure still matches the configuration.");

    // Someone changes the object by hand.
    await setVariable(world, ws, "STANDIN_DRIFT", "null_resource.a=two", { category: "env" });
    const drifted = await assess(ws);
    expect(drifted).toMatchObject({ status: "drifted", driftedResources: ["null_resource.a"] });
    expect(await driftStatus(ws)).toBe("drifted");
    const driftLog = await readRunLog(world, String(drifted.runId), "plan");
    expect(driftLog).toContain("# null_resource.a has changed");
    // A refresh-only plan that applies nothing: the state is the one the apply wrote.
    expect(await stateVersions(world, ws)).toHaveLength(1);
    // The CLI shows it too.
    expect(await cli(["workspaces", "show", "drifting"])).toMatch(/^drift: drifted \(checked /m);
    expect(await cli(["workspaces", "list"])).toMatch(/drifting .* drifted /);
    expect(await cli(["assessments", "list", "drifting"])).toMatch(
      new RegExp(`${String(drifted.id)}\\s+drifted\\s+null_resource\\.a\\s`),
    );
    const runs = await expectStatus(world.api("GET", `/api/v1/workspaces/${ws}/runs`), 200);
    expect((runs.runs as Json[]).map((r) => r.status)).toEqual([
      "planned_and_finished",
      "planned_and_finished",
      "applied",
    ]);
  });

  it("with autoRemediate, a drifted assessment queues a normal plan that undoes the drift", async () => {
    const ws = await createWorkspace(world, "remediated", {
      env: { STANDIN_DRIFT: "null_resource.b=changed-by-hand" },
    });
    await uploadConfiguration(world, ws, {
      "main.tf": 'resource "null_resource" "b" { value = "wanted" }\n',
    });
    const first = await queueRun(world, ws);
    expect((await waitForRun(world, first, ["planned", "errored"])).status).toBe("planned");
    await expectStatus(world.api("POST", `/api/v1/runs/${first}/confirm`), 200);
    expect((await waitForRun(world, first, ["applied", "errored"])).status).toBe("applied");
    await expectStatus(
      world.api("PATCH", `/api/v1/workspaces/${ws}`, { autoRemediate: true }),
      200,
    );

    const drifted = await assess(ws);
    expect(drifted).toMatchObject({ status: "drifted", driftedResources: ["null_resource.b"] });
    expect(drifted.remediationRunId).toMatch(/^run_/);
    const remediation = await waitForRun(world, String(drifted.remediationRunId), [
      "planned",
      "errored",
    ]);
    expect(remediation).toMatchObject({
      status: "planned",
      operation: "apply",
      source: "assessment",
    });
    expect(remediation.planSummary).toMatchObject({ changes: 1, hasChanges: true });
  });

  it("starts the assessments of an enabled workspace from the cron handler", async () => {
    const ws = await createWorkspace(world, "scheduled-assessments");
    await uploadConfiguration(world, ws, {
      "main.tf": 'resource "null_resource" "c" { value = "x" }\n',
    });
    await expectStatus(
      world.api("PATCH", `/api/v1/workspaces/${ws}`, { assessmentsEnabled: true }),
      200,
    );
    await world.coordinator.cron();
    const page = await expectStatus(world.api("GET", `/api/v1/workspaces/${ws}/assessments`), 200);
    const list = page.assessments as Json[];
    expect(list).toHaveLength(1);
    // Nothing applied yet: the refresh of an empty state finds no drift.
    expect(await settledAssessment(ws, String(list[0]?.id))).toMatchObject({ status: "no_drift" });
  });
});
