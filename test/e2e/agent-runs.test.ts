/**
 * Runs end to end: the real coordinator (wrangler's local runtime on loopback), the real
 * `outpost-agent` process, and the stand-in engine installed from the loopback release mirror.
 * One coordinator and one agent (concurrency 2) for the whole file.
 */
import { describe, expect, it } from "vitest";
import {
  createWorkspace,
  expectStatus,
  queueRun,
  readRunLog,
  setVariable,
  stateVersions,
  uploadConfiguration,
  waitForLog,
  waitForRun,
} from "./helpers/e2e.ts";
import { writeHook } from "./helpers/processes.ts";
import { useWorld } from "./helpers/world.ts";

const world = useWorld({ agents: [{ args: ["--concurrency", "2", "--cancel-grace", "5"] }] });

const resource = (name: string, value: string) =>
  `resource "null_resource" "${name}" { value = "${value}" }\n`;

describe("runs through the real coordinator and the real agent", () => {
  let confirmWs = "";

  it("plans, waits for confirmation, applies, and the state version lands", async () => {
    confirmWs = await createWorkspace(world, "confirm-flow");
    await uploadConfiguration(world, confirmWs, { "main.tf": resource("a", "one") });
    const runId = await queueRun(world, confirmWs, { operation: "apply" });
    const planned = await waitForRun(world, runId, ["planned", "errored"]);
    expect(planned.status).toBe("planned");
    expect(planned.planSummary).toMatchObject({
      adds: 1,
      changes: 0,
      destroys: 0,
      hasChanges: true,
    });
    expect(await stateVersions(world, confirmWs)).toHaveLength(0);

    await expectStatus(world.api("POST", `/api/v1/runs/${runId}/confirm`), 200);
    const applied = await waitForRun(world, runId, ["applied", "errored"]);
    expect(applied.status).toBe("applied");
    const versions = await stateVersions(world, confirmWs);
    expect(versions).toHaveLength(1);
    expect(versions[0]).toMatchObject({ runId, serial: 1, isCurrent: true });
    const planLog = await readRunLog(world, runId, "plan");
    expect(planLog).toContain("$ terraform plan -out=plan.tfplan");
    expect(planLog).toContain("Plan: 1 to add, 0 to change, 0 to destroy.");
    const applyLog = await readRunLog(world, runId, "apply");
    expect(applyLog).toContain("$ terraform apply -input=false -no-color plan.tfplan");
    expect(applyLog).toContain("Apply complete! Resources: 1 added, 0 changed, 0 destroyed.");
  });

  it("finishes a plan without changes as planned_and_finished, without an apply", async () => {
    const runId = await queueRun(world, confirmWs, { operation: "apply" });
    const run = await waitForRun(world, runId, ["planned_and_finished", "planned", "errored"]);
    expect(run.status).toBe("planned_and_finished");
    expect(run.planSummary).toMatchObject({ adds: 0, changes: 0, destroys: 0, hasChanges: false });
    expect(await readRunLog(world, runId, "plan")).toContain("No changes.");
    expect(await stateVersions(world, confirmWs)).toHaveLength(1);
  });

  it("auto-applies a workspace's run without confirmation", async () => {
    const ws = await createWorkspace(world, "auto-apply", { autoApply: true });
    await uploadConfiguration(world, ws, {
      "main.tf": resource("a", "x") + resource("b", "y"),
    });
    const runId = await queueRun(world, ws, { operation: "apply" });
    const run = await waitForRun(world, runId, ["applied", "errored", "canceled"]);
    expect(run.status).toBe("applied");
    expect(run.planSummary).toMatchObject({ adds: 2, hasChanges: true });
    const versions = await stateVersions(world, ws);
    // The stand-in writes one snapshot per resource, like terraform's intermediate persists.
    expect(versions.map((v) => v.serial).sort()).toEqual([1, 2]);
    expect(versions.every((v) => v.runId === runId)).toBe(true);
  });

  it("runs a speculative plan that never locks, never applies, and writes no state", async () => {
    const ws = await createWorkspace(world, "speculative", { autoApply: true });
    await uploadConfiguration(world, ws, { "main.tf": resource("a", "z") });
    const runId = await queueRun(world, ws, { operation: "plan" });
    const run = await waitForRun(world, runId, ["planned_and_finished", "errored", "applied"]);
    expect(run).toMatchObject({ status: "planned_and_finished", isSpeculative: true });
    expect(run.planSummary).toMatchObject({ adds: 1, hasChanges: true });
    const log = await readRunLog(world, runId, "plan");
    expect(log).toContain("-lock=false");
    expect(log).toContain("Plan: 1 to add");
    expect(await readRunLog(world, runId, "apply")).toBe("");
    expect(await stateVersions(world, ws)).toHaveLength(0);
  });

  it("masks sensitive variables the engine prints before the log leaves the agent", async () => {
    const secret = "hunter2-Sup3r-S3cret-value";
    const envSecret = "env-secret-0123456789";
    const ws = await createWorkspace(world, "sensitive", {
      env: { STANDIN_PRINT_ENV: "DB_TOKEN,PLAIN_ENV", PLAIN_ENV: "visible-value" },
    });
    await setVariable(world, ws, "password", secret, { category: "terraform", sensitive: true });
    await setVariable(world, ws, "DB_TOKEN", envSecret, { category: "env", sensitive: true });
    await uploadConfiguration(world, ws, {
      "main.tf": `variable "password" {}\n# standin:print var.password\n${resource("a", "b")}`,
    });
    const runId = await queueRun(world, ws, { operation: "plan" });
    await waitForRun(world, runId, ["planned_and_finished", "errored"]);
    const log = await readRunLog(world, runId, "plan");
    expect(log).toContain('var.password = "***"');
    expect(log).toContain('env.DB_TOKEN = "***"');
    expect(log).toContain('env.PLAIN_ENV = "visible-value"');
    expect(log).not.toContain(secret);
    expect(log).not.toContain(envSecret);
    expect(log).not.toMatch(/op_run_/);
  });

  it("cancels a running plan: the engine gets SIGINT and the run ends canceled", async () => {
    const ws = await createWorkspace(world, "cancel-plan", {
      env: { STANDIN_PLAN_SLEEP_MS: "120000" },
    });
    await uploadConfiguration(world, ws, { "main.tf": resource("a", "slow") });
    const runId = await queueRun(world, ws, { operation: "apply" });
    await waitForRun(world, runId, ["planning"]);
    await waitForLog(world, runId, "plan", /standin: planning/);
    const started = Date.now();
    await expectStatus(world.api("POST", `/api/v1/runs/${runId}/cancel`), 200);
    // The cancel rides on the next heartbeat (every 10 s).
    const run = await waitForRun(world, runId, ["canceled", "errored", "planned"], 25_000);
    expect(run.status).toBe("canceled");
    expect(Date.now() - started).toBeLessThan(25_000);
    const log = await readRunLog(world, runId, "plan");
    expect(log).toContain("Interrupt received.");
    expect(log).toContain("the plan was canceled");
    expect(await stateVersions(world, ws)).toHaveLength(0);
  });

  it("runs hooks around the engine; a hook's export reaches the next engine command", async () => {
    const dataDir = world.agent.dataDir;
    writeHook(
      dataDir,
      "pre-plan",
      [
        'if [ "$OUTPOST_WORKSPACE_NAME" = "hooks" ]; then',
        '  echo "pre-plan hook ran for run $OUTPOST_RUN_ID"',
        '  echo "HOOK_EXPORTED=from-the-hook" >> "$OUTPOST_AGENT_ENV"',
        "fi",
      ].join("\n"),
    );
    writeHook(
      dataDir,
      "post-plan",
      'if [ "$OUTPOST_WORKSPACE_NAME" = "hooks" ]; then echo "post-plan hook saw $HOOK_EXPORTED"; fi',
    );
    const ws = await createWorkspace(world, "hooks", {
      env: { STANDIN_PRINT_ENV: "HOOK_EXPORTED" },
    });
    await uploadConfiguration(world, ws, { "main.tf": resource("a", "h") });
    const runId = await queueRun(world, ws, { operation: "plan" });
    await waitForRun(world, runId, ["planned_and_finished", "errored"]);
    const log = await readRunLog(world, runId, "plan");
    expect(log).toContain(`pre-plan hook ran for run ${runId}`);
    expect(log).toContain('env.HOOK_EXPORTED = "from-the-hook"');
    expect(log).toContain("post-plan hook saw from-the-hook");
    expect(log.indexOf("pre-plan hook ran")).toBeLessThan(log.indexOf("$ terraform init"));
  });

  it("fails a run whose hook fails, naming the hook", async () => {
    writeHook(
      world.agent.dataDir,
      "pre-plan",
      'if [ "$OUTPOST_WORKSPACE_NAME" = "bad-hook" ]; then exit 7; fi',
    );
    const ws = await createWorkspace(world, "bad-hook");
    await uploadConfiguration(world, ws, { "main.tf": resource("a", "h") });
    const runId = await queueRun(world, ws, { operation: "plan" });
    const run = await waitForRun(world, runId, ["errored", "planned_and_finished"]);
    expect(run.status).toBe("errored");
    expect(String(run.statusReason)).toContain("pre-plan");
  });
});
