/**
 * A plan that would destroy every resource of the state from a configuration that declares none
 * never goes on to apply, unless the run is a destroy run or was queued with
 * `allowEmptyApply: true`: through the real routes, the real pool object and the real hooks.
 */
import type { JobsNextResponse } from "@outpost/protocol";
import { describe, expect, it } from "vitest";
import { requestJson } from "./helpers/api.ts";
import { seedOrg, type TestOrg } from "./helpers/fixtures.ts";
import { getRun, queueRun, runnableWorkspace, TestAgent } from "./helpers/runs.ts";

const EMPTIES = { adds: 0, changes: 0, destroys: 2, imports: 0, sames: 0, hasChanges: true };

/** Queues a run, has the agent finish its plan with `summary`, and returns the run after. */
async function planWith(
  org: TestOrg,
  summary: Record<string, unknown>,
  options: { run?: Record<string, unknown>; workspace?: Record<string, unknown> } = {},
) {
  const { workspace, agentToken } = await runnableWorkspace(org, options.workspace);
  const queued = await queueRun(org, workspace.id, options.run);
  expect(queued.status, JSON.stringify(queued.body)).toBe(201);
  const agent = await TestAgent.register(agentToken);
  const job = await agent.lease();
  await agent.start(job);
  const finished = await agent.finish(job, { outcome: "succeeded", planSummary: summary });
  expect(finished.status, JSON.stringify(finished.body)).toBe(200);
  return { run: await getRun(org, queued.body.id), agent, queued: queued.body };
}

async function nextAction(agent: TestAgent): Promise<string> {
  const res = await requestJson<JobsNextResponse>("/agent/v1/jobs/next?wait=0", {
    method: "POST",
    token: agent.token,
    headers: { "outpost-agent-id": agent.agentId },
  });
  // 204: nothing to run.
  return res.status === 204 ? "none" : res.body.action;
}

describe("a plan that empties the state", () => {
  it("ends an auto-apply run errored with the reason, and no apply job is queued", async () => {
    const org = await seedOrg();
    const { run, agent } = await planWith(org, EMPTIES, { workspace: { autoApply: true } });
    expect(run.status).toBe("errored");
    expect(run.statusReason).toBe(
      "refused to apply: the plan destroys all 2 resources of the state and the configuration declares none (an empty upload or the wrong working directory?); queue a destroy run to destroy everything, or queue the run again with allowEmptyApply: true",
    );
    expect(run.planSummary).toEqual(EMPTIES);
    expect(run.allowEmptyApply).toBe(false);
    expect(await nextAction(agent)).not.toBe("run");
  });

  it("refuses a confirmable apply run too, before anyone can confirm it", async () => {
    const org = await seedOrg();
    const { run } = await planWith(org, EMPTIES);
    expect(run.status).toBe("errored");
    expect(run.statusReason).toContain("allowEmptyApply: true");
  });

  it("goes on with allowEmptyApply: true, and for destroy runs", async () => {
    const org = await seedOrg();
    const allowed = await planWith(org, EMPTIES, {
      run: { allowEmptyApply: true },
      workspace: { autoApply: true },
    });
    expect(allowed.queued.allowEmptyApply).toBe(true);
    expect(allowed.run.status).toBe("apply_queued");
    expect(await nextAction(allowed.agent)).toBe("run");
    const destroy = await planWith(org, EMPTIES, { run: { operation: "destroy" } });
    expect(destroy.run.status).toBe("planned");
  });

  it("lets through plans that keep, add or change something, and speculative plans", async () => {
    const org = await seedOrg();
    for (const summary of [
      { ...EMPTIES, sames: 1 },
      { ...EMPTIES, adds: 1 },
      { ...EMPTIES, changes: 1 },
    ]) {
      expect((await planWith(org, summary)).run.status, JSON.stringify(summary)).toBe("planned");
    }
    // An agent that does not count what it keeps cannot tell: never refused.
    const { sames: _, ...uncounted } = EMPTIES;
    expect((await planWith(org, uncounted)).run.status).toBe("planned");
    const speculative = await planWith(org, EMPTIES, { run: { operation: "plan" } });
    expect(speculative.run.status).toBe("planned_and_finished");
  });

  it("counts Pulumi's own stack resource as nothing kept", async () => {
    const org = await seedOrg();
    const pulumi = { engine: "pulumi", engineVersion: "^3.150", stackName: "dev" };
    const stackOnly = { ...EMPTIES, replaces: 0, sames: 1 };
    const refused = await planWith(org, stackOnly, { workspace: pulumi });
    expect(refused.run.status).toBe("errored");
    const kept = await planWith(org, { ...stackOnly, sames: 2 }, { workspace: pulumi });
    expect(kept.run.status).toBe("planned");
  });

  it("refuses a non-boolean allowEmptyApply with 400", async () => {
    const org = await seedOrg();
    const { workspace } = await runnableWorkspace(org);
    const res = await queueRun(org, workspace.id, { allowEmptyApply: "yes" });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toContain("allowEmptyApply");
  });
});
