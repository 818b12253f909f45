/**
 * What the cloud backend reads while its run waits (`waitForRun`): the organization's run queue
 * with positions and its capacity, limited to the workspaces the caller may read, through the
 * auth matrix.
 */
import { describe, expect, it } from "vitest";
import { describeAuth } from "./helpers/auth-matrix.ts";
import { useTestClock } from "./helpers/clock.ts";
import { seedOrg } from "./helpers/fixtures.ts";
import { personWithAccess } from "./helpers/people.ts";
import { TestAgent } from "./helpers/runs.ts";
import { type ListDocument, orgName, tfe } from "./helpers/tfe.ts";
import { createTfeRun, tfeWorkspace, uploadedVersion } from "./helpers/tfe-runs.ts";

const clock = useTestClock();

describe("the run queue and capacity", () => {
  it("lists waiting runs oldest first with their position, and counts waiting and running", async () => {
    const org = await seedOrg();
    const name = await orgName(org);
    const { workspace, agentToken } = await tfeWorkspace(org);
    const token = org.tokens.member;
    const cvId = await uploadedVersion(token, workspace.id, { speculative: true });
    const first = await createTfeRun(token, workspace.id, cvId, { "plan-only": true });
    clock.advance(1000);
    const second = await createTfeRun(token, workspace.id, cvId, { "plan-only": true });
    const queue = await tfe<ListDocument>(`/organizations/${name}/runs/queue`, { token });
    expect(queue.status).toBe(200);
    expect(queue.body.data.map((r) => [r.id, r.attributes["position-in-queue"]])).toEqual([
      [first.id, 1],
      [second.id, 2],
    ]);
    expect(queue.body.meta.pagination["total-count"]).toBe(2);

    const agent = await TestAgent.register(agentToken);
    await agent.start(await agent.lease());
    const capacity = await tfe<{ data: { attributes: Record<string, number> } }>(
      `/organizations/${name}/capacity`,
      { token },
    );
    expect(capacity.body.data.attributes).toEqual({ pending: 1, running: 1 });

    // Someone who cannot read the workspace sees none of its runs.
    const { user } = await personWithAccess(org, { id: workspace.id }, null);
    const hidden = await tfe<ListDocument>(`/organizations/${name}/runs/queue`, {
      token: user.token,
    });
    expect(hidden.body.data).toEqual([]);
  });
});

for (const suffix of ["runs/queue", "capacity"]) {
  describeAuth(`GET /api/v2/organizations/{name}/${suffix}`, {
    target: async (org) => ({
      method: "GET",
      path: `/api/v2/organizations/${await orgName(org)}/${suffix}`,
    }),
    role: "reader",
  });
}
